import { crc32c } from "../../runtime/checksum/crc32c.ts";
import {
  readZigzag,
  readZigzagInto,
  varintBytesMax,
  type VarintRead,
  varlongBytesMax,
  writeZigzag,
  zigzagBytes,
} from "../../runtime/zigzag_varint.ts";

/**
 * Kafka's RecordBatch, magic 2: the batch as a Kafka producer sends it and a Kafka consumer reads
 * it. All integers big-endian.
 *
 *   0  baseOffset            i64  offset of the first record (set by the log; outside the CRC)
 *   8  batchLength           i32  bytes after this field
 *  12  partitionLeaderEpoch  i32
 *  16  magic                 i8   2
 *  17  crc                   u32  CRC32C of bytes [21, end)
 *  21  attributes            i16  bits 0-2 compression, 3 timestamp type, 4 transactional, 5 control
 *  23  lastOffsetDelta       i32  records - 1 when offsets are dense
 *  27  baseTimestamp         i64  milliseconds since the Unix epoch
 *  35  maxTimestamp          i64
 *  43  producerId            i64  -1 without idempotence
 *  51  producerEpoch         i16
 *  53  baseSequence          i32
 *  57  recordCount           i32
 *  61  records               (compressed as a whole when bits 0-2 say so)
 */
export const recordBatchHeaderBytes = 61;
export const recordBatchMagic = 2;

/** Where the fields the log reads or writes sit in a batch. */
export const batchField = {
  baseOffset: 0,
  batchLength: 8,
  partitionLeaderEpoch: 12,
  magic: 16,
  crc: 17,
  attributes: 21,
  lastOffsetDelta: 23,
  baseTimestamp: 27,
  maxTimestamp: 35,
  producerId: 43,
  producerEpoch: 51,
  baseSequence: 53,
  recordCount: 57,
} as const;

/** Bytes before `batchLength`'s count starts (`baseOffset` and `batchLength` themselves). */
export const batchLengthOverheadBytes = 12;

export type Compression = "none" | "gzip" | "snappy" | "lz4" | "zstd";
const compressions: readonly Compression[] = ["none", "gzip", "snappy", "lz4", "zstd"];

export type TimestampType = "create_time" | "log_append_time";

/** A batch's header, as read from its first 61 bytes. */
export interface RecordBatchHeader {
  baseOffset: number;
  /** The whole batch in bytes, `baseOffset` and `batchLength` included. */
  sizeBytes: number;
  partitionLeaderEpoch: number;
  crc: number;
  attributes: number;
  compression: Compression;
  timestampType: TimestampType;
  transactional: boolean;
  control: boolean;
  lastOffsetDelta: number;
  baseTimestampMs: number;
  maxTimestampMs: number;
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  recordCount: number;
}

/**
 * Why a batch was refused: Kafka's CORRUPT_MESSAGE, a feature not served (UNSUPPORTED_...),
 * timestamps that are no times (INVALID_TIMESTAMP), or a batch over the topic's size limit
 * (MESSAGE_TOO_LARGE).
 */
export type BatchRefusal = "corrupt" | "unsupported" | "timestamp" | "too_large";

/** A batch the log refuses, with the reason a Kafka answer or an HTTP 400 names. */
export class RecordBatchError extends Error {
  override name = "RecordBatchError";
  readonly refusal: BatchRefusal;
  constructor(refusal: BatchRefusal, reason: string, options?: ErrorOptions) {
    super(`Cannot accept record batch: ${reason}`, options);
    this.refusal = refusal;
  }
}

/**
 * Reads the header of the batch at `at`, checking what the header alone can tell: that its length
 * fits `bytes` and covers a header, and its magic. Neither the CRC nor the records are checked
 * (`validateRecordBatch`).
 */
export function readRecordBatchHeader(bytes: Uint8Array, at = 0): RecordBatchHeader {
  if (bytes.length - at < recordBatchHeaderBytes) {
    throw new RecordBatchError("corrupt", `${bytes.length - at} bytes are shorter than a batch header`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset + at, bytes.length - at);
  const sizeBytes = view.getInt32(batchField.batchLength) + batchLengthOverheadBytes;
  if (sizeBytes < recordBatchHeaderBytes || sizeBytes > bytes.length - at) {
    throw new RecordBatchError("corrupt", `its length ${sizeBytes} is outside [61, ${bytes.length - at}]`);
  }
  const magic = view.getInt8(batchField.magic);
  if (magic !== recordBatchMagic) {
    throw new RecordBatchError(
      "unsupported",
      `magic ${magic}; only magic 2 (Kafka 0.11 and later) is served`,
    );
  }
  const attributes = view.getInt16(batchField.attributes);
  const compression = compressions[attributes & 0x07];
  if (compression === undefined) {
    throw new RecordBatchError("corrupt", `compression code ${attributes & 0x07} is not one Kafka defines`);
  }
  return {
    baseOffset: readInt64(view, batchField.baseOffset),
    sizeBytes,
    partitionLeaderEpoch: view.getInt32(batchField.partitionLeaderEpoch),
    crc: view.getUint32(batchField.crc),
    attributes,
    compression,
    timestampType: (attributes & 0x08) === 0 ? "create_time" : "log_append_time",
    transactional: (attributes & 0x10) !== 0,
    control: (attributes & 0x20) !== 0,
    lastOffsetDelta: view.getInt32(batchField.lastOffsetDelta),
    baseTimestampMs: readInt64(view, batchField.baseTimestamp),
    maxTimestampMs: readInt64(view, batchField.maxTimestamp),
    producerId: readInt64(view, batchField.producerId),
    producerEpoch: view.getInt16(batchField.producerEpoch),
    baseSequence: view.getInt32(batchField.baseSequence),
    recordCount: view.getInt32(batchField.recordCount),
  };
}

/** CRC32C of the batch's bytes from its attributes to its end, as Kafka computes it. */
export function computeBatchCrc(batch: Uint8Array): number {
  return crc32c(batch.subarray(batchField.attributes));
}

/** Stamps the epoch of the leader that appended the batch (outside the CRC, like the base offset). */
export function setLeaderEpoch(batch: Uint8Array, leaderEpoch: number): void {
  if (!Number.isInteger(leaderEpoch) || leaderEpoch < 0 || leaderEpoch > 0x7fffffff) {
    throw new RangeError(`Cannot set leader epoch ${leaderEpoch}: not an epoch`);
  }
  new DataView(batch.buffer, batch.byteOffset, recordBatchHeaderBytes).setInt32(
    batchField.partitionLeaderEpoch,
    leaderEpoch,
  );
}

/** Writes `baseOffset` into the batch (outside the CRC, so the CRC stands). */
export function setBaseOffset(batch: Uint8Array, baseOffset: number): void {
  if (!Number.isSafeInteger(baseOffset) || baseOffset < 0) {
    throw new RangeError(`Cannot set base offset ${baseOffset}: not an offset`);
  }
  const view = new DataView(batch.buffer, batch.byteOffset, recordBatchHeaderBytes);
  view.setBigInt64(batchField.baseOffset, BigInt(baseOffset));
}

/**
 * Stamps the batch with log append time: the timestamp-type bit set and `maxTimestamp` the append
 * time, which is every record's timestamp for a consumer; the CRC, which covers both, recomputed.
 */
export function stampLogAppendTime(batch: Uint8Array, appendTimeMs: number): void {
  const view = new DataView(batch.buffer, batch.byteOffset, recordBatchHeaderBytes);
  view.setInt16(batchField.attributes, view.getInt16(batchField.attributes) | 0x08);
  view.setBigInt64(batchField.maxTimestamp, BigInt(appendTimeMs));
  view.setUint32(batchField.crc, computeBatchCrc(batch));
}

/** Reads an i64 that must be exact as a JavaScript number (offsets, milliseconds, producer ids). */
function readInt64(view: DataView, at: number): number {
  const value = view.getBigInt64(at);
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw new RecordBatchError("corrupt", `the 64-bit field at byte ${at} holds ${value}, beyond ±2^53`);
  }
  return Number(value);
}

const fromUtf8 = new TextDecoder("utf-8", { fatal: true });

/** A record header's name from its bytes; a corrupt batch when they are not UTF-8. */
export function decodeHeaderName(bytes: Uint8Array): string {
  try {
    return fromUtf8.decode(bytes);
  } catch (error) {
    throw new RecordBatchError("corrupt", "a header's name is not UTF-8", { cause: error });
  }
}

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
