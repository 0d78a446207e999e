import { crc32c } from "../runtime/crc32c.ts";

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

/** Writes `baseOffset` into the batch (outside the CRC, so the CRC stands). */
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
