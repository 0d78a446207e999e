import {
  batchField,
  batchLengthOverheadBytes,
  RecordBatchError,
  type RecordBatchHeader,
  recordBatchHeaderBytes,
  validateRecordBatch,
} from "./record_batch.ts";

/** One validated batch of a produce: its bytes (a view of what was sent) and its header. */
export interface ProducedBatch {
  bytes: Uint8Array;
  header: RecordBatchHeader;
}

/** Batches one produce of one partition may carry at most. */
export const producedBatchesMax = 1024;

/** Bytes of batches checked (CRC32C, framing) between two turns, at most: one piece of CPU work. */
export const producedCheckPieceBytes = 1024 * 1024;

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
 * uncompressed, the record framing), then what the log does not serve yet: the transactional bit
 * and control batches are refused as unsupported; a producer id without an epoch and a sequence,
 * as corrupt; and a negative timestamp, or a max timestamp below the base one, as invalid. The cut reads headers only
 * and refuses a batch over `batchBytesMax` before anything is checked; the checks then run in
 * pieces of about `producedCheckPieceBytes`, a turn before each after the first (one batch is never
 * split: its CRC covers it whole). Throws RecordBatchError.
 */
export async function checkProducedBatches(
  records: Uint8Array,
  checks: ProduceChecks,
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
    checkServed(header);
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

function checkServed(header: RecordBatchHeader): void {
  if (header.transactional || header.control) {
    throw new RecordBatchError("unsupported", "transactional producers are not served yet");
  }
  if (
    header.producerId < -1 ||
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
