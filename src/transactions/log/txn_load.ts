import { fnv1a32 } from "../../broker/shards/shard_runtime.ts";
import { assert } from "../../runtime/assert.ts";
import { loadTxn } from "../core/txn_core.ts";
import type { TxnEffect } from "../core/txn_events.ts";
import type { TxnState } from "../core/txn_state.ts";
import type { TxnLogRecord } from "./txn_records.ts";

/** The partition of `__transaction_state` that holds a transactional id, by a stable hash of it. */
export function txnPartitionOf(transactionalId: string, partitions: number): number {
  assert(partitions >= 1, "the transaction state topic has partitions");
  return fnv1a32(transactionalId) % partitions;
}

/**
 * A partition of `__transaction_state` read back when a coordinator comes to lead it: the latest
 * record of each transactional id wins and a tombstone forgets it; once read, each id's state is
 * loaded (`loadTxn`), and the markers of ends decided before are written again.
 */
export class TxnPartitionLoad {
  readonly #records = new Map<string, TxnLogRecord["value"]>();
  #finished = false;

  /** Transactional ids the partition's records name so far, tombstoned ones included. */
  get size(): number {
    return this.#records.size;
  }

  /** A record read from the partition, in log order. */
  replayed(record: TxnLogRecord): void {
    assert(!this.#finished, "records are replayed only while loading");
    this.#records.delete(record.transactionalId);
    this.#records.set(record.transactionalId, record.value);
  }

  /** The ids' states once every record is read, and the effects their loading asks for. */
  finish(): { states: Map<string, TxnState>; effects: TxnEffect[] } {
    assert(!this.#finished, "a load finishes once");
    this.#finished = true;
    const states = new Map<string, TxnState>();
    const effects: TxnEffect[] = [];
    for (const [transactionalId, value] of this.#records) {
      if (value === null) continue;
      assert(value.transactionalId === transactionalId, "a record's value is its key's");
      const step = loadTxn(value);
      states.set(transactionalId, step.state!);
      effects.push(...step.effects);
    }
    return { states, effects };
  }
}
