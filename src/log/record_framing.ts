import { varintBytesMax, varlongBytesMax } from "../runtime/zigzag_varint.ts";
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

/** The position after the varint `zigzag` read last, and its value: one reader, no object per field. */
let readAt = 0;
let readValue = 0;

/** Reads a zigzag varint at `at` within `end` into `readValue` and `readAt`; false when malformed. */
function zigzag(bytes: Uint8Array, at: number, end: number, bytesMax: number): boolean {
  let unsigned = 0;
  let scale = 1;
  for (let i = 0; i < bytesMax && at + i < end; i++) {
    const byte = bytes[at + i]!;
    unsigned += (byte & 0x7f) * scale;
    if (unsigned > Number.MAX_SAFE_INTEGER) return false;
    if ((byte & 0x80) === 0) {
      readValue = unsigned % 2 === 0 ? unsigned / 2 : -(unsigned + 1) / 2;
      readAt = at + i + 1;
      return true;
    }
    scale *= 128;
  }
  return false;
}

function field(bytes: Uint8Array, at: number, end: number, bytesMax: number, name: string): number {
  if (!zigzag(bytes, at, end, bytesMax)) {
    throw new RecordBatchError("corrupt", `a record's ${name} is truncated or malformed`);
  }
  return readValue;
}

/** Skips a nullable byte string at `at`; returns its length (-1 for null); `readAt` is after it. */
function bytesField(bytes: Uint8Array, at: number, end: number, name: string): number {
  if (!zigzag(bytes, at, end, varintBytesMax)) {
    throw new RecordBatchError("corrupt", `a record's ${name} length is truncated`);
  }
  const length = readValue;
  if (length === -1) return -1;
  if (length < -1 || readAt + length > end) {
    throw new RecordBatchError("corrupt", `a record's ${name} length ${length} runs past the record`);
  }
  readAt += length;
  return length;
}

const fromUtf8 = new TextDecoder("utf-8", { fatal: true });

/** Checks the record at `at`, which should have offset delta `expectedDelta`; returns its end. */
function checkRecord(batch: Uint8Array, at: number, expectedDelta: number): number {
  const length = field(batch, at, batch.length, varlongBytesMax, "record length");
  const end = readAt + length;
  if (length < 1 || end > batch.length) {
    throw new RecordBatchError("corrupt", `a record's length ${length} runs past its batch`);
  }
  // The attributes byte is unused in magic 2: skipped.
  field(batch, readAt + 1, end, varlongBytesMax, "timestamp delta");
  const offsetDelta = field(batch, readAt, end, varlongBytesMax, "offset delta");
  if (offsetDelta !== expectedDelta) {
    throw new RecordBatchError("corrupt", `record ${expectedDelta} has offset delta ${offsetDelta}`);
  }
  bytesField(batch, readAt, end, "key");
  bytesField(batch, readAt, end, "value");
  const headerCount = field(batch, readAt, end, varlongBytesMax, "header count");
  if (headerCount < 0 || headerCount > length) {
    throw new RecordBatchError("corrupt", `a record's header count ${headerCount} is impossible`);
  }
  for (let h = 0; h < headerCount; h++) {
    const nameLength = bytesField(batch, readAt, end, "header name");
    if (nameLength === -1) throw new RecordBatchError("corrupt", "a header's name is null");
    checkUtf8(batch.subarray(readAt - nameLength, readAt));
    bytesField(batch, readAt, end, "header value");
  }
  if (readAt !== end) {
    throw new RecordBatchError("corrupt", `a record's fields end at ${readAt}, its length says ${end}`);
  }
  return end;
}

function checkUtf8(name: Uint8Array): void {
  try {
    fromUtf8.decode(name);
  } catch (error) {
    throw new RecordBatchError("corrupt", "a header's name is not UTF-8", { cause: error });
  }
}
