import {
  batchField,
  batchLengthOverheadBytes,
  RecordBatchError,
  type RecordBatchHeader,
  recordBatchHeaderBytes,
  validateRecordBatch,
} from "./record_batch.ts";
import { readTxnMarker } from "./txn_marker.ts";

/** One validated batch of a produce: its bytes (a view of what was sent) and its header. */
export interface ProducedBatch {
  bytes: Uint8Array;
  header: RecordBatchHeader;
}

/** Batches one produce of one partition may carry at most. */
export const producedBatchesMax = 1024;

/** Bytes of batches checked (CRC32C, framing) between two turns, at most: one piece of CPU work. */
export const producedCheckPieceBytes = 1024 * 1024;

/**
 * Who wrote the batches: a producer (`client`), whose control batches are refused; the transaction
 * coordinator (`coordinator`), whose markers are control batches; or the leader a follower copies
 * (`replica`), whose log holds both.
 */
export type BatchOrigin = "client" | "coordinator" | "replica";

/** How a produce's batches are checked: the topic's size limit, and the turn taken between pieces. */
export interface ProduceChecks {
  /** `max_message_bytes`: a larger batch is refused as too large (Kafka's MESSAGE_TOO_LARGE). */
  batchBytesMax: number;
  /** Awaited before each piece of checks after the first; the shard's piece gate. */
  turn: () => Promise<void>;
}

/** No size limit and no turns: for callers that bound the work themselves, and tests. */
export const noProduceLimits: ProduceChecks = { batchBytesMax: Infinity, turn: () => Promise.resolve() };

/**
 * Cuts what a producer sent for one partition into its record batches and checks each as the log
 * must before it appends it (`validateRecordBatch`: magic, length, CRC32C, record count and, when
 * uncompressed, the record framing), then what a batch of `origin` may be: a control batch from a
 * producer is refused as unsupported, and one that is no transaction marker as corrupt; a
 * transactional batch without a producer id, or a producer id without an epoch and a sequence, as
 * corrupt; and a negative timestamp, or a max timestamp below the base one, as invalid. The cut reads headers only
 * and refuses a batch over `batchBytesMax` before anything is checked; the checks then run in
 * pieces of about `producedCheckPieceBytes`, a turn before each after the first (one batch is never
 * split: its CRC covers it whole). Throws RecordBatchError.
 */
export async function checkProducedBatches(
  records: Uint8Array,
  checks: ProduceChecks,
  origin: BatchOrigin = "client",
): Promise<ProducedBatch[]> {
  const views = cutProducedBatches(records, checks.batchBytesMax);
  const batches: ProducedBatch[] = [];
  let pieceBytes = 0;
  for (const bytes of views) {
    if (pieceBytes > 0 && pieceBytes + bytes.length > producedCheckPieceBytes) {
      await checks.turn();
      pieceBytes = 0;
    }
    const header = validateRecordBatch(bytes);
    checkServed(bytes, header, origin);
    batches.push({ bytes, header });
    pieceBytes += bytes.length;
  }
  return batches;
}

/** The batches of `records` by their length fields, each at most `batchBytesMax`; no CRC is read. */
export function cutProducedBatches(records: Uint8Array, batchBytesMax: number): Uint8Array[] {
  if (records.length === 0) throw new RecordBatchError("corrupt", "no record batch was sent");
  const views: Uint8Array[] = [];
  for (let at = 0; at < records.length;) {
    if (views.length >= producedBatchesMax) {
      throw new RecordBatchError("corrupt", `more than ${producedBatchesMax} batches for one partition`);
    }
    const rest = records.subarray(at);
    if (rest.length < recordBatchHeaderBytes) {
      throw new RecordBatchError("corrupt", `${rest.length} bytes after the last batch are not a batch`);
    }
    const view = new DataView(rest.buffer, rest.byteOffset, recordBatchHeaderBytes);
    const sizeBytes = view.getInt32(batchField.batchLength) + batchLengthOverheadBytes;
    if (sizeBytes < recordBatchHeaderBytes || sizeBytes > rest.length) {
      throw new RecordBatchError(
        "corrupt",
        `a batch length of ${sizeBytes} bytes runs past the ${rest.length} sent`,
      );
    }
    if (sizeBytes > batchBytesMax) {
      throw new RecordBatchError(
        "too_large",
        `a batch of ${sizeBytes} bytes is larger than the topic's max_message_bytes, ${batchBytesMax}`,
      );
    }
    views.push(rest.subarray(0, sizeBytes));
    at += sizeBytes;
  }
  return views;
}

function checkServed(bytes: Uint8Array, header: RecordBatchHeader, origin: BatchOrigin): void {
  if (header.control) {
    if (origin === "client") {
      throw new RecordBatchError("unsupported", "control batches are written by the transaction coordinator");
    }
    if (header.producerId < 0 || readTxnMarker(bytes) === null) {
      throw new RecordBatchError("corrupt", "a control batch is a transaction marker of a producer");
    }
  } else if (
    header.producerId < -1 || (header.transactional && header.producerId < 0) ||
    (header.producerId >= 0 && (header.producerEpoch < 0 || header.baseSequence < 0))
  ) {
    throw new RecordBatchError(
      "corrupt",
      `producer id ${header.producerId} with epoch ${header.producerEpoch} and sequence ${header.baseSequence} is no idempotent producer's batch`,
    );
  }
  if (header.baseTimestampMs < 0 || header.maxTimestampMs < header.baseTimestampMs) {
    throw new RecordBatchError(
      "timestamp",
      `its timestamps ${header.baseTimestampMs} to ${header.maxTimestampMs} are not a range of times`,
    );
  }
}
