import {
  readZigzagInto,
  varintBytesMax,
  type VarintRead,
  varlongBytesMax,
} from "../runtime/zigzag_varint.ts";
import { decodeHeaderName } from "./header_name.ts";
import { RecordBatchError, recordBatchHeaderBytes } from "./record_batch.ts";

/**
 * The framing check of an uncompressed RecordBatch v2's records, as a produce's batches pass it
 * (`validateRecordBatch`): exactly `count` records, offset deltas 0, 1, 2 ..., each record's fields
 * within its length and its length within the batch, header names present and UTF-8, the records
 * filling the batch. It walks the bytes without making a record, a view or a result object per
 * field, so that a produce of a million small records leaves the garbage collector nothing to do
 * but for header names (`decodeRecord` makes the records themselves where they are read).
 */
export function checkRecordFraming(batch: Uint8Array, count: number): void {
  let at = recordBatchHeaderBytes;
  for (let i = 0; i < count; i++) {
    if (at >= batch.length) throw new RecordBatchError("corrupt", `it ends after ${i} of ${count} records`);
    at = checkRecord(batch, at, i);
  }
  if (at !== batch.length) {
    throw new RecordBatchError("corrupt", `${batch.length - at} bytes follow its ${count} records`);
  }
}

/** The field read last, and the position after it: one reader for every field, no object per field. */
const read: VarintRead = { value: 0, next: 0 };

function field(bytes: Uint8Array, at: number, end: number, bytesMax: number, name: string): number {
  if (!readZigzagInto(bytes, at, end, bytesMax, read)) {
    throw new RecordBatchError("corrupt", `a record's ${name} is truncated or malformed`);
  }
  return read.value;
}

/** Skips a nullable byte string at `at`; returns its length (-1 for null); `read.next` is after it. */
function bytesField(bytes: Uint8Array, at: number, end: number, name: string): number {
  if (!readZigzagInto(bytes, at, end, varintBytesMax, read)) {
    throw new RecordBatchError("corrupt", `a record's ${name} length is truncated`);
  }
  const length = read.value;
  if (length === -1) return -1;
  if (length < -1 || read.next + length > end) {
    throw new RecordBatchError("corrupt", `a record's ${name} length ${length} runs past the record`);
  }
  read.next += length;
  return length;
}

/** Checks the record at `at`, which should have offset delta `expectedDelta`; returns its end. */
function checkRecord(batch: Uint8Array, at: number, expectedDelta: number): number {
  const length = field(batch, at, batch.length, varlongBytesMax, "record length");
  const end = read.next + length;
  if (length < 1 || end > batch.length) {
    throw new RecordBatchError("corrupt", `a record's length ${length} runs past its batch`);
  }
  // The attributes byte is unused in magic 2: skipped.
  field(batch, read.next + 1, end, varlongBytesMax, "timestamp delta");
  const offsetDelta = field(batch, read.next, end, varlongBytesMax, "offset delta");
  if (offsetDelta !== expectedDelta) {
    throw new RecordBatchError("corrupt", `record ${expectedDelta} has offset delta ${offsetDelta}`);
  }
  bytesField(batch, read.next, end, "key");
  bytesField(batch, read.next, end, "value");
  const headerCount = field(batch, read.next, end, varlongBytesMax, "header count");
  if (headerCount < 0 || headerCount > length) {
    throw new RecordBatchError("corrupt", `a record's header count ${headerCount} is impossible`);
  }
  for (let h = 0; h < headerCount; h++) {
    const nameLength = bytesField(batch, read.next, end, "header name");
    if (nameLength === -1) throw new RecordBatchError("corrupt", "a header's name is null");
    decodeHeaderName(batch.subarray(read.next - nameLength, read.next));
    bytesField(batch, read.next, end, "header value");
  }
  if (read.next !== end) {
    throw new RecordBatchError("corrupt", `a record's fields end at ${read.next}, its length says ${end}`);
  }
  return end;
}
