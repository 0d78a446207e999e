import { validateRecordBatch } from "./batch_records.ts";
import {
  batchField,
  batchLengthOverheadBytes,
  RecordBatchError,
  type RecordBatchHeader,
  recordBatchHeaderBytes,
} from "./record_batch.ts";

/** One validated batch of a produce: its bytes (a view of what was sent) and its header. */
export interface ProducedBatch {
  bytes: Uint8Array;
  header: RecordBatchHeader;
}

/** Batches one produce of one partition may carry at most. */
export const producedBatchesMax = 1024;

/**
 * Cuts what a producer sent for one partition into its record batches and checks each as the log
 * must before it appends it (`validateRecordBatch`: magic, length, CRC32C, record count and, when
 * uncompressed, the record framing), then what the log does not serve yet: a producer id
 * (idempotence), the transactional bit and control batches are refused as unsupported, and a
 * negative timestamp, or a max timestamp below the base one, as invalid. Throws RecordBatchError.
 */
export function checkProducedBatches(records: Uint8Array): ProducedBatch[] {
  if (records.length === 0) throw new RecordBatchError("corrupt", "no record batch was sent");
  const batches: ProducedBatch[] = [];
  for (let at = 0; at < records.length;) {
    if (batches.length >= producedBatchesMax) {
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
    const bytes = rest.subarray(0, sizeBytes);
    const header = validateRecordBatch(bytes);
    checkServed(header);
    batches.push({ bytes, header });
    at += sizeBytes;
  }
  return batches;
}

function checkServed(header: RecordBatchHeader): void {
  if (header.producerId !== -1 || header.transactional || header.control) {
    throw new RecordBatchError(
      "unsupported",
      "idempotent and transactional producers are not served yet (set enable.idempotence=false)",
    );
  }
  if (header.baseTimestampMs < 0 || header.maxTimestampMs < header.baseTimestampMs) {
    throw new RecordBatchError(
      "timestamp",
      `its timestamps ${header.baseTimestampMs} to ${header.maxTimestampMs} are not a range of times`,
    );
  }
}
