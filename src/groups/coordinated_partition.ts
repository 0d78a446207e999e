import { assert } from "../runtime/assert.ts";
import { SerialQueue } from "../runtime/cooperation/serial_queue.ts";
import { CommittedOffsets } from "./offsets/committed_offsets.ts";
import { PendingTxnOffsets } from "./offsets/pending_txn_offsets.ts";
import type { GroupState } from "./core/group_state.ts";
import type { OffsetsRecord, StoredGroup } from "./offsets/offsets_records.ts";
import { groupFromStored } from "./offsets/stored_group.ts";

/** Appends (commits, group metadata, checkpoints) queued on one offsets partition at most. */
export const partitionAppendsQueuedMax = 4096;

/**
 * One partition of `__consumer_offsets` while this node leads it: the groups it coordinates and
 * their committed offsets, loaded from the partition's records under one leader epoch. Its appends
 * run one at a time, in the order they were queued, each applied to memory once it is replicated,
 * so that what memory holds is what the log holds up to the last append, and a checkpoint taken
 * from memory in its turn covers everything appended before it.
 */
export class CoordinatedPartition {
  readonly index: number;
  readonly leaderEpoch: number;
  status: "loading" | "loaded" | "failed" = "loading";
  /** When a failed load is tried again (clock ms). */
  retryAtMs = Infinity;
  readonly groups = new Map<string, GroupState>();
  readonly offsets: CommittedOffsets;
  /** Offsets of transactions not yet ended (TxnOffsetCommit). */
  readonly pendingTxnOffsets: PendingTxnOffsets;
  /** Bytes appended (or read at load) since the last checkpoint. */
  appendedBytes = 0;
  /** The bytes the last checkpoint wrote: the next waits until as many again were appended. */
  checkpointBytes = 0;
  checkpointQueued = false;
  /**
   * Groups whose metadata is queued to be written (once, with the state it has then), each with
   * the write's end: what a step answers after its persist waits for it.
   */
  readonly persistQueued = new Map<string, Promise<void>>();
  /** Group records read at load, taken up as groups once the load completes. */
  #storedGroups: Map<string, StoredGroup> | null = new Map();
  readonly #appends: SerialQueue;
  #settleLoad: () => void = () => {};
  readonly #loadSettled = new Promise<void>((resolve) => (this.#settleLoad = resolve));

  constructor(index: number, leaderEpoch: number, offsetsPerGroupMax: number) {
    this.index = index;
    this.leaderEpoch = leaderEpoch;
    this.offsets = new CommittedOffsets(offsetsPerGroupMax);
    this.pendingTxnOffsets = new PendingTxnOffsets(offsetsPerGroupMax);
    this.#appends = new SerialQueue(`offsets partition ${index}`, partitionAppendsQueuedMax);
  }

  /**
   * A record read at load: the latest record of each key wins; a transaction's end applies its
   * producer's pending offsets as it did when it was written.
   */
  replayed(record: OffsetsRecord): void {
    assert(this.#storedGroups !== null, "records are replayed only while loading");
    if (record.kind === "offset") {
      this.offsets.set(record.groupId, record.topic, record.partition, record.value);
    } else if (record.kind === "txn_offset") {
      this.pendingTxnOffsets.add(record);
    } else if (record.kind === "txn_end") {
      this.endTxn(record.producerId, record.commit);
    } else if (record.value === null) {
      this.#storedGroups.delete(record.groupId);
    } else {
      this.#storedGroups.set(record.groupId, record.value);
    }
  }

  /** A producer's transaction ended: its pending offsets are committed, or dropped on an abort. */
  endTxn(producerId: number, commit: boolean): void {
    for (const pending of this.pendingTxnOffsets.take(producerId)) {
      if (commit) this.offsets.set(pending.groupId, pending.topic, pending.partition, pending.value);
    }
  }

  /** The load is complete: the groups read are taken up, their sessions starting now. */
  loaded(nowMs: number): void {
    assert(this.#storedGroups !== null, "a partition loads once");
    for (const [groupId, stored] of this.#storedGroups) {
      this.groups.set(groupId, groupFromStored(groupId, stored, nowMs));
    }
    this.#storedGroups = null;
    this.status = "loaded";
    this.#settleLoad();
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

  /** Groups known by metadata or by committed offsets. */
  groupIds(): Set<string> {
    return new Set([...this.groups.keys(), ...this.offsets.groupIds()]);
  }

  /**
   * Runs `append` once every append queued before it has finished (whatever its outcome); refuses
   * with `QueueFullError` past `partitionAppendsQueuedMax` waiting.
   */
  enqueue<T>(append: () => Promise<T>): Promise<T> {
    return this.#appends.enqueue(append);
  }

  /** Resolves once every append queued so far has finished. */
  settled(): Promise<void> {
    return this.#appends.settled();
  }
}
