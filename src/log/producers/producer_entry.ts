import type { TxnMarker } from "../batch/txn_marker.ts";
import { assert } from "../../runtime/assert.ts";
import type { RecordBatchHeader } from "../batch/record_batch.ts";

/**
 * Batches of one producer a partition remembers: a retry of any of them is answered with the
 * offsets it was first given. Kafka's bound on `max.in.flight.requests.per.connection` with
 * idempotence, so every batch a producer may still retry is among them.
 */
export const producerBatchesKept = 5;

/** A batch's sequence numbers run from 0 to this and wrap to 0 (Kafka's `Integer.MAX_VALUE`). */
export const sequenceMax = 0x7fffffff;

/** One appended batch of a producer: its sequence range and where the log put it. */
export interface ProducerBatch {
  firstSequence: number;
  lastSequence: number;
  firstOffset: number;
  lastOffset: number;
}

/**
 * What a partition knows of one idempotent producer: its epoch, its last batches (oldest first, at
 * most `producerBatchesKept`, all of one epoch; none when only a marker or an open transaction made
 * it known), the largest timestamp of its last batch, by which it expires, and its open transaction.
 */
export interface ProducerEntry {
  producerId: number;
  epoch: number;
  batches: readonly ProducerBatch[];
  lastTimestampMs: number;
  /**
   * The first offset of the producer's open transaction (its first transactional batch since its
   * last marker); absent when none is open. The partition's last stable offset stays at or below it.
   */
  txnFirstOffset?: number;
  /**
   * The coordinator epoch of the producer's last transaction marker; absent before any. A marker of
   * an older coordinator is refused (Kafka's TRANSACTION_COORDINATOR_FENCED).
   */
  coordinatorEpoch?: number;
}

/** What a produced batch of an idempotent producer is to the partition, judged before it is appended. */
export type ProducerVerdict =
  | { kind: "append" }
  /** A retry of one of the producer's last batches: answered with its first offsets, appended again never. */
  | { kind: "duplicate"; batch: ProducerBatch }
  /** Kafka's OUT_OF_ORDER_SEQUENCE_NUMBER: a gap, or a new epoch that does not start at 0. */
  | { kind: "out_of_order"; reason: string }
  /** Kafka's INVALID_PRODUCER_EPOCH: an epoch older than the partition's. */
  | { kind: "old_epoch"; reason: string }
  /** Kafka's INVALID_TXN_STATE: a batch outside a transaction while the producer has one open. */
  | { kind: "invalid_txn_state"; reason: string }
  /** Kafka's TRANSACTION_COORDINATOR_FENCED: a marker of a coordinator older than the producer's last one. */
  | { kind: "coordinator_fenced"; reason: string };

/** The last sequence number of a batch: its first plus its last offset delta, wrapping past `sequenceMax`. */
export function lastSequenceOf(header: RecordBatchHeader): number {
  assert(header.baseSequence >= 0 && header.lastOffsetDelta >= 0, "an idempotent batch has a sequence");
  return (header.baseSequence + header.lastOffsetDelta) % (sequenceMax + 1);
}

/** Whether `next` follows `last` (wrapping from `sequenceMax` to 0). */
function follows(last: number, next: number): boolean {
  return next === (last === sequenceMax ? 0 : last + 1);
}

/**
 * Judges a client's batch of producer `header.producerId` against what the partition knows of it
 * (`entry`; undefined when it knows nothing), as Kafka's broker does:
 * - an older epoch is refused;
 * - a batch of the current epoch with the sequence range of one of the last batches is a duplicate;
 * - a new epoch (a producer that bumped it, KIP-360) must start at sequence 0;
 * - within the epoch, each batch starts right after the last one's last sequence;
 * - a producer the partition knows nothing of (never seen, expired, or removed with its segments)
 *   may start at any sequence, so that a client whose state the partition lost goes on;
 * - a batch outside a transaction from a producer with one open is refused;
 * - a transaction marker of the producer's epoch or a newer one (a fence) is appended, unless its
 *   coordinator epoch (`markerCoordinatorEpoch`) is older than that of the producer's last marker.
 */
export function judgeBatch(
  entry: ProducerEntry | undefined,
  header: RecordBatchHeader,
  markerCoordinatorEpoch: number | null = null,
): ProducerVerdict {
  if (entry === undefined) return { kind: "append" };
  const { producerId, producerEpoch: epoch, baseSequence: first } = header;
  if (epoch < entry.epoch) {
    return {
      kind: "old_epoch",
      reason: `producer ${producerId}'s epoch ${epoch} is older than the partition's ${entry.epoch}`,
    };
  }
  // A transaction marker (from its coordinator) is refused only for an older epoch or coordinator.
  if (header.control) return judgeMarker(entry, markerCoordinatorEpoch);
  if (!header.transactional && entry.txnFirstOffset !== undefined) {
    return {
      kind: "invalid_txn_state",
      reason: `producer ${producerId} sent a batch outside a transaction while its transaction from ` +
        `offset ${entry.txnFirstOffset} is open`,
    };
  }
  if (epoch > entry.epoch) {
    if (first === 0) return { kind: "append" };
    return {
      kind: "out_of_order",
      reason: `producer ${producerId}'s new epoch ${epoch} starts at sequence ${first}, not 0`,
    };
  }
  const lastSequence = lastSequenceOf(header);
  const duplicate = entry.batches.find((b) => b.firstSequence === first && b.lastSequence === lastSequence);
  if (duplicate !== undefined) return { kind: "duplicate", batch: duplicate };
  const last = entry.batches.at(-1);
  // Known by a marker alone, or by a transaction whose batches a cut took: any sequence goes on.
  if (last === undefined || follows(last.lastSequence, first)) return { kind: "append" };
  return {
    kind: "out_of_order",
    reason: `producer ${producerId} sent sequence ${first} after ${last.lastSequence} (epoch ${epoch})`,
  };
}

function judgeMarker(entry: ProducerEntry, coordinatorEpoch: number | null): ProducerVerdict {
  const last = entry.coordinatorEpoch;
  if (coordinatorEpoch === null || last === undefined || coordinatorEpoch >= last) return { kind: "append" };
  return {
    kind: "coordinator_fenced",
    reason: `producer ${entry.producerId}'s marker comes from coordinator epoch ${coordinatorEpoch}, ` +
      `older than its last marker's ${last}`,
  };
}

/**
 * The producer's entry once `header`'s batch is in the log at `firstOffset`: a new epoch forgets the
 * old one's batches, and only the last `producerBatchesKept` are kept. Used for a client's batch the
 * partition judged `append`, and for every batch a follower replicates or a recovery replays.
 */
export function entryAfter(
  entry: ProducerEntry | undefined,
  header: RecordBatchHeader,
  firstOffset: number,
): ProducerEntry {
  const batch: ProducerBatch = {
    firstSequence: header.baseSequence,
    lastSequence: lastSequenceOf(header),
    firstOffset,
    lastOffset: firstOffset + header.lastOffsetDelta,
  };
  assert(!header.control, "a control batch moves its producer on as a marker (`entryAfterMarker`)");
  const sameEpoch = entry !== undefined && entry.epoch === header.producerEpoch;
  const kept = sameEpoch ? entry.batches.slice(-(producerBatchesKept - 1)) : [];
  const txnFirstOffset = header.transactional ? entry?.txnFirstOffset ?? firstOffset : entry?.txnFirstOffset;
  const coordinatorEpoch = entry?.coordinatorEpoch;
  return {
    producerId: header.producerId,
    epoch: header.producerEpoch,
    batches: [...kept, batch],
    lastTimestampMs: header.maxTimestampMs,
    ...(txnFirstOffset === undefined ? {} : { txnFirstOffset }),
    ...(coordinatorEpoch === undefined ? {} : { coordinatorEpoch }),
  };
}

/** A transaction a marker ended: its producer, its offsets, how it ended. */
export interface CompletedTxn {
  producerId: number;
  firstOffset: number;
  /** The marker's offset. */
  lastOffset: number;
  aborted: boolean;
}

/**
 * The producer's entry once a transaction marker of its (COMMIT or ABORT, at `offset`) is in the log:
 * its open transaction, if any, is complete, and its epoch is the marker's when that is newer (a
 * coordinator's fence), so that the fenced producer's next batch here is refused. A producer the
 * partition knew nothing of is remembered with no batch, at the marker's epoch.
 */
export function entryAfterMarker(
  entry: ProducerEntry | undefined,
  marker: TxnMarker,
  offset: number,
): { entry: ProducerEntry; completed: CompletedTxn | null } {
  if (entry === undefined) {
    const known = {
      producerId: marker.producerId,
      epoch: marker.epoch,
      batches: [],
      lastTimestampMs: marker.timestampMs,
      coordinatorEpoch: marker.coordinatorEpoch,
    };
    return { entry: known, completed: null };
  }
  const { txnFirstOffset, ...rest } = entry;
  const completed = txnFirstOffset === undefined ? null : {
    producerId: entry.producerId,
    firstOffset: txnFirstOffset,
    lastOffset: offset,
    aborted: !marker.commit,
  };
  const lastTimestampMs = Math.max(entry.lastTimestampMs, marker.timestampMs);
  // A newer epoch's sequences start again at 0: the older epoch's batches would be taken for theirs.
  const fenced = marker.epoch > entry.epoch;
  const batches = fenced ? [] : entry.batches;
  // A replica and a recovery take every marker their leader wrote: the newest coordinator's stays.
  const coordinatorEpoch = Math.max(
    entry.coordinatorEpoch ?? marker.coordinatorEpoch,
    marker.coordinatorEpoch,
  );
  return {
    entry: {
      ...rest,
      epoch: Math.max(entry.epoch, marker.epoch),
      batches,
      lastTimestampMs,
      coordinatorEpoch,
    },
    completed,
  };
}

/**
 * The producer's entry once the log is cut back to end below `offset` (a follower's truncation):
 * its batches at or above the cut are gone, and its open transaction if it began there; an entry
 * left with neither is forgotten (undefined), and its producer may start again at any sequence.
 */
export function entryBelow(entry: ProducerEntry, offset: number): ProducerEntry | undefined {
  const batches = entry.batches.filter((b) => b.lastOffset < offset);
  const txnCut = entry.txnFirstOffset !== undefined && entry.txnFirstOffset >= offset;
  if (batches.length === entry.batches.length && !txnCut) return entry;
  const { txnFirstOffset, ...rest } = entry;
  const txnKept = !txnCut && txnFirstOffset !== undefined;
  if (batches.length === 0 && !txnKept) return undefined;
  return { ...rest, batches, ...(txnKept ? { txnFirstOffset } : {}) };
}
