import { assert } from "../../runtime/assert.ts";
import type { RecordBatchHeader } from "../batch/record_batch.ts";
import { readTxnMarker, type TxnMarker } from "../batch/txn_marker.ts";
import type { AbortedTxn } from "./aborted_txns.ts";
import { ProducerRefusedError } from "../log_errors.ts";
import {
  type CompletedTxn,
  entryAfter,
  entryAfterMarker,
  entryBelow,
  judgeBatch,
  type ProducerEntry,
} from "./producer_entry.ts";

/**
 * Idempotent producers one partition keeps state for, at most. Each costs a few hundred bytes;
 * past the bound a new producer is refused until idle ones expire (`expire`).
 */
export const producersPerPartitionMax = 10_000;

/** How many produces a partition answered as duplicates, and refused by reason, since it opened. */
export interface ProducerCounts {
  duplicates: number;
  outOfOrder: number;
  oldEpoch: number;
  invalidTxnState: number;
  tooManyProducers: number;
  coordinatorFenced: number;
}

/** No produce counted. */
export function noProducerCounts(): ProducerCounts {
  return {
    duplicates: 0,
    outOfOrder: 0,
    oldEpoch: 0,
    invalidTxnState: 0,
    tooManyProducers: 0,
    coordinatorFenced: 0,
  };
}

/** Adds `more` into `into`, field by field. */
export function addProducerCounts(into: ProducerCounts, more: Readonly<ProducerCounts>): void {
  into.duplicates += more.duplicates;
  into.outOfOrder += more.outOfOrder;
  into.oldEpoch += more.oldEpoch;
  into.invalidTxnState += more.invalidTxnState;
  into.tooManyProducers += more.tooManyProducers;
  into.coordinatorFenced += more.coordinatorFenced;
}

/** What a produce's batches are to the partition's producers, judged together before any is appended. */
export type ProducePlan =
  | { kind: "append" }
  /** A retry of a batch the log holds: the produce is answered with its offsets and appends nothing. */
  | { kind: "duplicate"; firstOffset: number; lastOffset: number }
  | { kind: "refused"; error: ProducerRefusedError };

/**
 * A partition's idempotent producers by id (`ProducerEntry`): what a client's produce is judged
 * against before it is appended (`plan`), and what every appended batch updates (`record`), a
 * leader's, a follower's and a recovery's alike. Batches without a producer id (-1) have no part in
 * it. Changed only by the partition's writer loop.
 */
export class ProducerStates {
  readonly #label: string;
  readonly #producersMax: number;
  readonly #entries = new Map<number, ProducerEntry>();
  /** The first offset of each producer's open transaction, by producer id. */
  readonly #openTxns = new Map<number, number>();
  /**
   * Transactions whose markers are placed but not yet below the high watermark, in marker order: the
   * last stable offset stays at their first offsets until their markers are replicated, so that a
   * read_committed consumer never reads a transaction whose end a new leader might not hold.
   */
  #unreplicated: CompletedTxn[] = [];
  /** The plans that answered a produce without appending it, counted (`counted`). */
  readonly counts: ProducerCounts = noProducerCounts();

  constructor(label: string, producersMax = producersPerPartitionMax) {
    assert(Number.isInteger(producersMax) && producersMax >= 1, "producersMax must be a positive integer");
    this.#label = label;
    this.#producersMax = producersMax;
  }

  /** The state a snapshot held (`ProducerSnapshots`), before the batches after it are replayed. */
  static restored(label: string, entries: readonly ProducerEntry[]): ProducerStates {
    const states = new ProducerStates(label);
    for (const entry of entries) states.#set(entry.producerId, entry);
    return states;
  }

  /** Every entry, for a snapshot. */
  snapshot(): ProducerEntry[] {
    return [...this.#entries.values()];
  }

  /** Forgets every producer (a purge). */
  clear(): void {
    this.#entries.clear();
    this.#openTxns.clear();
    this.#unreplicated = [];
  }

  /**
   * The partition's last stable offset (Kafka's LSO) under `highWatermark`: the first offset of the
   * oldest transaction still open, or of one completed whose marker is not yet below the high
   * watermark, else the high watermark. A read_committed consumer reads below it only.
   */
  lastStableOffset(highWatermark: number): number {
    // Markers below the high watermark are replicated: their transactions hold nothing back.
    let replicated = 0;
    while (
      replicated < this.#unreplicated.length && this.#unreplicated[replicated]!.lastOffset < highWatermark
    ) {
      replicated++;
    }
    if (replicated > 0) this.#unreplicated = this.#unreplicated.slice(replicated);
    let stable = Math.min(highWatermark, this.firstUnstableOffset() ?? highWatermark);
    // Bounded by the transactions completed above the high watermark.
    for (const txn of this.#unreplicated) stable = Math.min(stable, txn.firstOffset);
    return stable;
  }

  /**
   * The first offset of the oldest transaction still open, or null when none is: the partition's
   * last stable offset is at most this (Kafka's first unstable offset).
   */
  firstUnstableOffset(): number | null {
    let first: number | null = null;
    // Bounded by the producers with a transaction open, at most `producersMax`.
    for (const offset of this.#openTxns.values()) first = first === null ? offset : Math.min(first, offset);
    return first;
  }

  /**
   * The aborted-transaction index entry of a transaction a marker just completed (`recordMarker`),
   * or null for a committed one: the last stable offset it records is the first offset of the
   * oldest transaction still open, or the offset after the marker when none is.
   */
  abortedEntryOf(completed: CompletedTxn): AbortedTxn | null {
    if (!completed.aborted) return null;
    assert(!this.#openTxns.has(completed.producerId), "a completed transaction is no longer open");
    const { producerId, firstOffset, lastOffset } = completed;
    return {
      producerId,
      firstOffset,
      lastOffset,
      lastStableOffset: this.firstUnstableOffset() ?? lastOffset + 1,
    };
  }

  /** Keeps `entry` as the producer's, and its open transaction's first offset beside it. */
  #set(producerId: number, entry: ProducerEntry): void {
    this.#entries.set(producerId, entry);
    if (entry.txnFirstOffset === undefined) this.#openTxns.delete(producerId);
    else this.#openTxns.set(producerId, entry.txnFirstOffset);
  }

  #delete(producerId: number): void {
    this.#entries.delete(producerId);
    this.#openTxns.delete(producerId);
  }

  /** Gauge: producers the partition keeps state for. */
  get size(): number {
    return this.#entries.size;
  }

  /** The entry of `producerId`, if the partition knows it. */
  entry(producerId: number): ProducerEntry | undefined {
    return this.#entries.get(producerId);
  }

  /**
   * Judges a client's batches in order, each as if those before it were appended (`judgeBatch`),
   * changing nothing. The first duplicate answers for the whole produce, as Kafka's broker does; any
   * refusal refuses all of it. `nextOffset` is where the first batch would go; `markerCoordinatorEpoch`
   * gives a transaction marker's coordinator epoch by its index among `headers`.
   */
  plan(
    headers: readonly RecordBatchHeader[],
    nextOffset: number,
    markerCoordinatorEpoch: (index: number) => number | null = () => null,
  ): ProducePlan {
    const planned = new Map<number, ProducerEntry>();
    let offset = nextOffset;
    for (const [index, header] of headers.entries()) {
      const producerId = header.producerId;
      if (producerId < 0) {
        offset += header.lastOffsetDelta + 1;
        continue;
      }
      const entry = planned.get(producerId) ?? this.#entries.get(producerId);
      const verdict = judgeBatch(entry, header, header.control ? markerCoordinatorEpoch(index) : null);
      if (verdict.kind === "duplicate") {
        return {
          kind: "duplicate",
          firstOffset: verdict.batch.firstOffset,
          lastOffset: verdict.batch.lastOffset,
        };
      }
      if (verdict.kind !== "append") {
        return {
          kind: "refused",
          error: new ProducerRefusedError(this.#label, verdict.kind, verdict.reason),
        };
      }
      // A marker of a producer unknown here is written past the bound: the transaction coordinator
      // bounds the transactions whose markers come.
      if (
        entry === undefined && !header.control &&
        this.#entries.size + newProducers(planned, this.#entries) >= this.#producersMax
      ) {
        const reason =
          `it keeps state for ${this.#producersMax} producers, its bound; producer ${producerId} is one more`;
        return {
          kind: "refused",
          error: new ProducerRefusedError(this.#label, "too_many_producers", reason),
        };
      }
      // A marker is written alone, by the coordinator: nothing after it in the produce to judge.
      if (!header.control) planned.set(producerId, entryAfter(entry, header, offset));
      offset += header.lastOffsetDelta + 1;
    }
    return { kind: "append" };
  }

  /** Counts a plan that answers its produce without an append: a duplicate or a refusal. */
  counted(plan: ProducePlan): void {
    if (plan.kind === "duplicate") this.counts.duplicates++;
    if (plan.kind !== "refused") return;
    const refusal = plan.error.refusal;
    if (refusal === "out_of_order") this.counts.outOfOrder++;
    else if (refusal === "old_epoch") this.counts.oldEpoch++;
    else if (refusal === "invalid_txn_state") this.counts.invalidTxnState++;
    else if (refusal === "coordinator_fenced") this.counts.coordinatorFenced++;
    else this.counts.tooManyProducers++;
  }

  /** A batch the log placed at `firstOffset`: its producer's entry moves on (`entryAfter`). */
  record(header: RecordBatchHeader, firstOffset: number): void {
    if (header.producerId < 0) return;
    this.#set(header.producerId, entryAfter(this.#entries.get(header.producerId), header, firstOffset));
  }

  /**
   * Any batch the log placed at `firstOffset` (`batch`, its header read): a transaction marker
   * completes its producer's transaction (`recordMarker`, which it returns), any other moves its
   * producer on (`record`). Batches of no producer, and control batches of other types, change nothing.
   */
  recordBatch(batch: Uint8Array, header: RecordBatchHeader, firstOffset: number): CompletedTxn | null {
    if (header.producerId < 0) return null;
    if (!header.control) {
      this.record(header, firstOffset);
      return null;
    }
    const marker = readTxnMarker(batch);
    const completed = marker === null ? null : this.recordMarker(marker, firstOffset);
    if (completed !== null) this.#unreplicated.push(completed);
    return completed;
  }

  /**
   * A transaction marker the log placed at `offset` (`entryAfterMarker`): returns the transaction it
   * completed, or null when its producer had none open here.
   */
  recordMarker(
    marker: TxnMarker,
    offset: number,
  ): CompletedTxn | null {
    const { entry, completed } = entryAfterMarker(this.#entries.get(marker.producerId), marker, offset);
    this.#set(marker.producerId, entry);
    return completed;
  }

  /** The log was cut back to end below `offset`: batches from there on are forgotten (`entryBelow`). */
  truncateFrom(offset: number): void {
    // A cut is above the high watermark: every marker it takes is among the unreplicated.
    const cut = this.#unreplicated.filter((txn) => txn.lastOffset >= offset);
    this.#unreplicated = this.#unreplicated.filter((txn) => txn.lastOffset < offset);
    for (const [producerId, entry] of this.#entries) {
      const kept = entryBelow(entry, offset);
      if (kept === undefined) this.#delete(producerId);
      else if (kept !== entry) this.#set(producerId, kept);
    }
    // A transaction whose marker is cut but whose batches are kept is open again.
    for (const txn of cut) {
      const entry = this.#entries.get(txn.producerId);
      if (txn.firstOffset < offset && entry !== undefined && entry.txnFirstOffset === undefined) {
        this.#set(txn.producerId, { ...entry, txnFirstOffset: txn.firstOffset });
      }
    }
  }

  /**
   * Forgets producers whose last batch's timestamp is `expirationMs` or more before `nowWallMs`
   * (Kafka's `producer.id.expiration.ms`), but never one with a transaction open; returns how many.
   */
  expire(nowWallMs: number, expirationMs: number): number {
    let expired = 0;
    for (const [producerId, entry] of this.#entries) {
      if (nowWallMs - entry.lastTimestampMs < expirationMs || entry.txnFirstOffset !== undefined) continue;
      this.#delete(producerId);
      expired++;
    }
    return expired;
  }
}

/** Producers planned that the partition does not know yet. */
function newProducers(
  planned: ReadonlyMap<number, ProducerEntry>,
  known: ReadonlyMap<number, ProducerEntry>,
) {
  let count = 0;
  for (const producerId of planned.keys()) if (!known.has(producerId)) count++;
  return count;
}
