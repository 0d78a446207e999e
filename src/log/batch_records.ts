import { readZigzag, varintBytesMax, writeZigzag, zigzagBytes } from "../runtime/zigzag_varint.ts";
import { checkRecordFraming } from "./record_framing.ts";
import { decodeHeaderName } from "./header_name.ts";
import {
  batchField,
  batchLengthOverheadBytes,
  computeBatchCrc,
  readRecordBatchHeader,
  RecordBatchError,
  type RecordBatchHeader,
  recordBatchHeaderBytes,
  recordBatchMagic,
} from "./record_batch.ts";

/**
 * The records inside an uncompressed RecordBatch v2, each framed as Kafka frames it:
 *
 *   length varint (bytes after it), attributes i8 (unused, 0), timestampDelta varlong (from the
 *   batch's baseTimestamp), offsetDelta varint (from its baseOffset), keyLength varint (-1: null),
 *   key, valueLength varint (-1: null), value, headerCount varint, and per header keyLength varint,
 *   key (UTF-8), valueLength varint (-1: null), value.
 */

/** A header of a record: names may repeat, order is kept, a value may be null. */
export interface RecordHeader {
  name: string;
  value: Uint8Array | null;
}

/** One record as a batch carries it, relative to the batch's base offset and timestamp. */
export interface BatchRecord {
  offsetDelta: number;
  timestampDelta: number;
  key: Uint8Array | null;
  value: Uint8Array | null;
  headers: readonly RecordHeader[];
}

const utf8 = new TextEncoder();

/** Decodes the record at `at` of `bytes` (a batch's record section); throws RecordBatchError when malformed. */
export function decodeRecord(bytes: Uint8Array, at: number): { record: BatchRecord; next: number } {
  const length = varint(bytes, at, "record length");
  const end = length.next + length.value;
  if (length.value < 1 || end > bytes.length) {
    throw new RecordBatchError("corrupt", `a record's length ${length.value} runs past its batch`);
  }
  const body = bytes.subarray(0, end);
  // The attributes byte is unused in magic 2: skipped.
  const timestampDelta = varint(body, length.next + 1, "timestamp delta");
  const offsetDelta = varint(body, timestampDelta.next, "offset delta");
  const key = nullableBytes(body, offsetDelta.next, "key");
  const value = nullableBytes(body, key.next, "value");
  const headerCount = varint(body, value.next, "header count");
  if (headerCount.value < 0 || headerCount.value > length.value) {
    throw new RecordBatchError("corrupt", `a record's header count ${headerCount.value} is impossible`);
  }
  const headers: RecordHeader[] = [];
  let next = headerCount.next;
  for (let i = 0; i < headerCount.value; i++) {
    const name = nullableBytes(body, next, "header name");
    if (name.bytes === null) throw new RecordBatchError("corrupt", "a header's name is null");
    const headerValue = nullableBytes(body, name.next, "header value");
    headers.push({ name: decodeHeaderName(name.bytes), value: headerValue.bytes });
    next = headerValue.next;
  }
  if (next !== end) {
    throw new RecordBatchError("corrupt", `a record's fields end at ${next}, its length says ${end}`);
  }
  const record = {
    offsetDelta: offsetDelta.value,
    timestampDelta: timestampDelta.value,
    key: key.bytes,
    value: value.bytes,
    headers,
  };
  return { record, next: end };
}

/** The bytes `encodeRecord` writes for `record`. */
export function recordBytes(record: BatchRecord): number {
  const body = bodyBytes(record);
  return zigzagBytes(body) + body;
}

/** Writes `record` at `at`; returns the position after it. */
export function encodeRecord(out: Uint8Array, at: number, record: BatchRecord): number {
  let next = writeZigzag(out, at, bodyBytes(record));
  out[next++] = 0;
  next = writeZigzag(out, next, record.timestampDelta);
  next = writeZigzag(out, next, record.offsetDelta);
  next = writeNullable(out, next, record.key);
  next = writeNullable(out, next, record.value);
  next = writeZigzag(out, next, record.headers.length);
  for (const header of record.headers) {
    next = writeNullable(out, next, utf8.encode(header.name));
    next = writeNullable(out, next, header.value);
  }
  return next;
}

/** What a new batch says besides its records. */
export interface BatchOptions {
  baseOffset: number;
  baseTimestampMs: number;
  maxTimestampMs: number;
  timestampType: "create_time" | "log_append_time";
}

/** The bytes of an uncompressed RecordBatch v2 of `records`. */
export function recordBatchBytes(records: readonly BatchRecord[]): number {
  return recordBatchHeaderBytes + records.reduce((n, r) => n + recordBytes(r), 0);
}

/**
 * An uncompressed RecordBatch v2 of `records`, with its CRC, as a producer without idempotence
 * sends one (producer id -1, epoch -1, sequence -1, leader epoch -1).
 */
export function encodeRecordBatch(records: readonly BatchRecord[], options: BatchOptions): Uint8Array {
  const batch = new Uint8Array(recordBatchBytes(records));
  writeRecordBatch(batch, records, options);
  return batch;
}

/**
 * Writes the batch `encodeRecordBatch` makes into `target`, exactly its length, every byte of it:
 * the log encodes straight into reused write buffers.
 */
export function writeRecordBatch(
  target: Uint8Array,
  records: readonly BatchRecord[],
  options: BatchOptions,
): void {
  if (records.length === 0) throw new RangeError("Cannot encode a record batch: it has no records");
  const view = new DataView(target.buffer, target.byteOffset, target.byteLength);
  view.setBigInt64(batchField.baseOffset, BigInt(options.baseOffset));
  view.setInt32(batchField.batchLength, target.length - batchLengthOverheadBytes);
  view.setInt32(batchField.partitionLeaderEpoch, -1);
  view.setInt8(batchField.magic, recordBatchMagic);
  view.setInt16(batchField.attributes, options.timestampType === "log_append_time" ? 0x08 : 0);
  view.setInt32(batchField.lastOffsetDelta, records[records.length - 1]!.offsetDelta);
  view.setBigInt64(batchField.baseTimestamp, BigInt(options.baseTimestampMs));
  view.setBigInt64(batchField.maxTimestamp, BigInt(options.maxTimestampMs));
  view.setBigInt64(batchField.producerId, -1n);
  view.setInt16(batchField.producerEpoch, -1);
  view.setInt32(batchField.baseSequence, -1);
  view.setInt32(batchField.recordCount, records.length);
  let next = recordBatchHeaderBytes;
  for (const record of records) next = encodeRecord(target, next, record);
  if (next !== target.length) {
    throw new RangeError(
      `Cannot encode a record batch of ${next} bytes into ${target.length}: not exactly its length`,
    );
  }
  view.setUint32(batchField.crc, computeBatchCrc(target));
}

/**
 * Checks a whole batch as the log must before it appends it: its header, its CRC32C, its record
 * count against `lastOffsetDelta`, and for an uncompressed batch that exactly `recordCount` records,
 * with offset deltas 0, 1, 2 ..., fill it. Returns the header; throws RecordBatchError.
 */
export function validateRecordBatch(batch: Uint8Array): RecordBatchHeader {
  const header = readRecordBatchHeader(batch);
  if (header.sizeBytes !== batch.length) {
    throw new RecordBatchError("corrupt", `its length says ${header.sizeBytes} bytes, ${batch.length} came`);
  }
  const crc = computeBatchCrc(batch);
  if (crc !== header.crc) {
    throw new RecordBatchError("corrupt", `its CRC32C is ${hex(crc)}, its header says ${hex(header.crc)}`);
  }
  if (header.recordCount < 1 || header.lastOffsetDelta !== header.recordCount - 1) {
    throw new RecordBatchError(
      "corrupt",
      `${header.recordCount} records do not match the last offset delta ${header.lastOffsetDelta}`,
    );
  }
  if (header.compression === "none") checkRecordFraming(batch, header.recordCount);
  return header;
}

function bodyBytes(record: BatchRecord): number {
  let n = 1 + zigzagBytes(record.timestampDelta) + zigzagBytes(record.offsetDelta);
  n += nullableBytesSize(record.key) + nullableBytesSize(record.value) + zigzagBytes(record.headers.length);
  for (const header of record.headers) {
    n += nullableBytesSize(utf8.encode(header.name)) + nullableBytesSize(header.value);
  }
  return n;
}

function nullableBytesSize(bytes: Uint8Array | null): number {
  return bytes === null ? zigzagBytes(-1) : zigzagBytes(bytes.length) + bytes.length;
}

function writeNullable(out: Uint8Array, at: number, bytes: Uint8Array | null): number {
  if (bytes === null) return writeZigzag(out, at, -1);
  const next = writeZigzag(out, at, bytes.length);
  out.set(bytes, next);
  return next + bytes.length;
}

function varint(bytes: Uint8Array, at: number, field: string): { value: number; next: number } {
  const read = readZigzag(bytes, at);
  if (read === null) throw new RecordBatchError("corrupt", `a record's ${field} is truncated or malformed`);
  return read;
}

function nullableBytes(
  bytes: Uint8Array,
  at: number,
  field: string,
): { bytes: Uint8Array | null; next: number } {
  const length = readZigzag(bytes, at, varintBytesMax);
  if (length === null) throw new RecordBatchError("corrupt", `a record's ${field} length is truncated`);
  if (length.value === -1) return { bytes: null, next: length.next };
  const end = length.next + length.value;
  if (length.value < -1 || end > bytes.length) {
    throw new RecordBatchError("corrupt", `a record's ${field} length ${length.value} runs past the record`);
  }
  return { bytes: bytes.subarray(length.next, end), next: end };
}

function hex(n: number): string {
  return `0x${n.toString(16).padStart(8, "0")}`;
}
