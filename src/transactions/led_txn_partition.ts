import { assert } from "../runtime/assert.ts";
import { SerialQueue } from "../runtime/cooperation/serial_queue.ts";
import type { TxnEffect } from "./core/txn_events.ts";
import { recordOf } from "./core/txn_state.ts";
import { TxnPartitionLoad } from "./log/txn_load.ts";
import type { TxnLogRecord } from "./log/txn_records.ts";
import { TxnCoordinatedPartition, type TxnPartitionSettings } from "./txn_partition.ts";

/** Appends (records, checkpoints) queued on one partition of `__transaction_state` at most. */
export const txnAppendsQueuedMax = 4096;

/**
 * One partition of `__transaction_state` while this node leads it, under one leader epoch: loading
 * its records, then its transactional ids (`TxnCoordinatedPartition`) once loaded. Its appends run
 * one at a time, each applied to memory once replicated, so that a checkpoint taken from memory in
 * its turn covers every append queued before it.
 */
export class LedTxnPartition {
  readonly index: number;
  readonly leaderEpoch: number;
  status: "loading" | "loaded" | "failed" = "loading";
  /** When a failed load is tried again (clock ms). */
  retryAtMs = Infinity;
  /** Bytes appended (or read at load) since the last checkpoint. */
  appendedBytes = 0;
  /** The bytes the last checkpoint wrote: the next waits until as many again were appended. */
  checkpointBytes = 0;
  checkpointQueued = false;
  readonly appends: SerialQueue;
  #txns: TxnCoordinatedPartition | null = null;
  #load: TxnPartitionLoad | null = new TxnPartitionLoad();
  #settleLoad: () => void = () => {};
  readonly #loadSettled = new Promise<void>((resolve) => (this.#settleLoad = resolve));

  constructor(index: number, leaderEpoch: number) {
    this.index = index;
    this.leaderEpoch = leaderEpoch;
    this.appends = new SerialQueue(`transaction state partition ${index}`, txnAppendsQueuedMax);
  }

  /** The ids it coordinates; only once loaded. */
  get txns(): TxnCoordinatedPartition {
    assert(this.#txns !== null, `transaction state partition ${this.index} is loaded`);
    return this.#txns;
  }

  /** A record read at load. */
  replayed(record: TxnLogRecord): void {
    assert(this.#load !== null, "records are replayed only while loading");
    this.#load.replayed(record);
  }

  /** The load is complete: the ids read are taken up; returns the effects their loading asks for. */
  loaded(settings: TxnPartitionSettings): TxnEffect[] {
    assert(this.#load !== null, "a partition loads once");
    const { states, effects } = this.#load.finish();
    this.#load = null;
    this.#txns = new TxnCoordinatedPartition(this.index, this.leaderEpoch, settings, states);
    this.status = "loaded";
    this.#settleLoad();
    return effects;
  }

  /** The load failed: requests are refused until it is tried again. */
  failed(retryAtMs: number): void {
    this.status = "failed";
    this.retryAtMs = retryAtMs;
    this.#settleLoad();
  }

  /** Resolves once the load has ended, loaded or failed. */
  get loadSettled(): Promise<void> {
    return this.#loadSettled;
  }

  /** Every id's record as memory holds it, for a checkpoint: ids never yet written are left out. */
  liveRecords(): TxnLogRecord[] {
    const records: TxnLogRecord[] = [];
    for (const state of this.txns.states()) {
      if (state.producerEpoch >= 0) {
        records.push({ transactionalId: state.transactionalId, value: recordOf(state) });
      }
    }
    return records;
  }
}
