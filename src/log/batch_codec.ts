import { assert } from "../runtime/assert.ts";
import {
  type BatchRecord,
  decodeRecord,
  recordBatchBytes,
  type RecordHeader,
  writeRecordBatch,
} from "./batch_records.ts";
import { decompressRecords } from "./batch_compression.ts";
import {
  batchField,
  batchLengthOverheadBytes,
  computeBatchCrc,
  RecordBatchError,
  recordBatchHeaderBytes,
  recordBatchMagic,
} from "./record_batch.ts";

/**
 * The log's batches are Kafka's RecordBatch v2 (`record_batch.ts`, docs/FORMAT.md). This is the
 * log's view of them: messages in and out, headers read for scans and recovery (which must never
 * throw on torn or foreign bytes), and the CRC check. Timestamps are milliseconds in the batch and
 * microseconds (whole milliseconds) in the log's own metadata: index entries, markers, manifests.
 */
export const batchHeaderBytes = recordBatchHeaderBytes;
/** The batch format the log writes and reads: Kafka's magic 2. */
export const batchFormatVersion = recordBatchMagic;

/** A header of a record: names may repeat, order is kept, a value may be null. */
export type { RecordHeader };

/** A message to append, as a producer gives it. */
export interface MessageInput {
  /** Text (stored as its UTF-8) or bytes; null: no key. */
  key: string | Uint8Array | null;
  /** Names to text values, or the ordered list a Kafka record has (names may repeat, values be null). */
  headers: Readonly<Record<string, string>> | readonly RecordHeader[];
  /** The value; null is a null value (a Kafka tombstone), not an empty one. */
  payload: Uint8Array | null;
  /** Milliseconds since the Unix epoch; absent: the server's time at the append. */
  timestampMs?: number;
}

/** A message as the log holds it: Kafka's record model. */
export interface StoredMessage {
  offset: number;
  /** Milliseconds since the Unix epoch. */
  timestampMs: number;
  key: Uint8Array | null;
  headers: readonly RecordHeader[];
  payload: Uint8Array | null;
}

export interface BatchHeader {
  baseOffset: number;
  lengthBytes: number;
  crc32c: number;
  /** The batch's magic byte: `batchFormatVersion` for a batch of this log. */
  formatVersion: number;
  /** Attribute bits 0 to 2: 0 uncompressed, 1 gzip, 2 snappy, 3 lz4, 4 zstd. */
  compressionCode: number;
  /** Attribute bit 3: stamped with log append time, every record's timestamp the max timestamp. */
  logAppendTime: boolean;
  messageCount: number;
  baseTimestampUs: number;
  maxTimestampUs: number;
  lastOffsetDelta: number;
}

const encoder = new TextEncoder();

/** Messages measured for a batch: their records, timestamps and the batch's whole length. */
export interface PreparedBatch {
  readonly records: readonly BatchRecord[];
  readonly lengthBytes: number;
  readonly baseTimestampMs: number;
  readonly maxTimestampMs: number;
}

/** The headers of a message as a record's list: a map's entries in order, with text values. */
function headerList(headers: MessageInput["headers"]): readonly RecordHeader[] {
  if (Array.isArray(headers)) return headers as readonly RecordHeader[];
  const list: RecordHeader[] = [];
  for (const [name, value] of Object.entries(headers)) list.push({ name, value: encoder.encode(value) });
  return list;
}

/**
 * Measures the batch `messages` make; a message without a timestamp takes `stampMs`, the server's
 * time at the append. The first message's timestamp is the batch's base, as Kafka has it.
 */
export function prepareBatch(messages: readonly MessageInput[], stampMs: number): PreparedBatch {
  assert(messages.length > 0, "Cannot encode an empty batch");
  const baseTimestampMs = messages[0]!.timestampMs ?? stampMs;
  let maxTimestampMs = baseTimestampMs;
  const records = messages.map((m, offsetDelta): BatchRecord => {
    const timestampMs = m.timestampMs ?? stampMs;
    maxTimestampMs = Math.max(maxTimestampMs, timestampMs);
    return {
      offsetDelta,
      timestampDelta: timestampMs - baseTimestampMs,
      key: typeof m.key === "string" ? encoder.encode(m.key) : m.key,
      value: m.payload,
      headers: headerList(m.headers),
    };
  });
  return { records, lengthBytes: recordBatchBytes(records), baseTimestampMs, maxTimestampMs };
}

/**
 * Writes a prepared batch into `target`, exactly its length: the log encodes straight into its
 * write buffer, so a produce costs no buffer of its own.
 */
export function writeBatchInto(target: Uint8Array, baseOffset: number, batch: PreparedBatch): void {
  assert(Number.isSafeInteger(baseOffset) && baseOffset >= 0, "batch base offset must be a safe integer");
  assert(target.length === batch.lengthBytes, "a batch's target must be exactly its length");
  writeRecordBatch(target, batch.records, {
    baseOffset,
    baseTimestampMs: batch.baseTimestampMs,
    maxTimestampMs: batch.maxTimestampMs,
    timestampType: "create_time",
  });
}

/** Encodes messages as one batch of its own; a message without a timestamp takes `stampMs`. */
export function encodeBatch(
  baseOffset: number,
  stampMs: number,
  messages: readonly MessageInput[],
): Uint8Array {
  const batch = prepareBatch(messages, stampMs);
  const bytes = new Uint8Array(batch.lengthBytes);
  writeBatchInto(bytes, baseOffset, batch);
  return bytes;
}

/**
 * Reads a batch header at `pos`, or null when fewer than a header's bytes remain. Never throws:
 * torn or foreign bytes give a header that `isPlausibleHeader` refuses.
 */
export function decodeBatchHeader(bytes: Uint8Array, pos = 0): BatchHeader | null {
  if (bytes.length - pos < batchHeaderBytes) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset + pos, batchHeaderBytes);
  return {
    baseOffset: Number(view.getBigInt64(batchField.baseOffset)),
    lengthBytes: view.getInt32(batchField.batchLength) + batchLengthOverheadBytes,
    crc32c: view.getUint32(batchField.crc),
    formatVersion: view.getInt8(batchField.magic),
    compressionCode: view.getInt16(batchField.attributes) & 0x07,
    logAppendTime: (view.getInt16(batchField.attributes) & 0x08) !== 0,
    messageCount: view.getInt32(batchField.recordCount),
    baseTimestampUs: Number(view.getBigInt64(batchField.baseTimestamp)) * 1000,
    maxTimestampUs: Number(view.getBigInt64(batchField.maxTimestamp)) * 1000,
    lastOffsetDelta: view.getInt32(batchField.lastOffsetDelta),
  };
}

/** True when a header is self-consistent; says nothing about the bytes it covers. */
export function isPlausibleHeader(header: BatchHeader): boolean {
  return header.formatVersion === batchFormatVersion &&
    Number.isSafeInteger(header.baseOffset) && header.baseOffset >= 0 &&
    header.lengthBytes >= batchHeaderBytes &&
    header.messageCount >= 1 &&
    header.lastOffsetDelta === header.messageCount - 1 &&
    header.compressionCode <= 4 &&
    Number.isSafeInteger(header.maxTimestampUs) && header.baseTimestampUs >= 0 &&
    header.maxTimestampUs >= header.baseTimestampUs;
}

/** True when `batch` (exactly one whole batch) carries a matching CRC32C. */
export function verifyBatch(batch: Uint8Array): boolean {
  const header = decodeBatchHeader(batch);
  if (header === null || header.lengthBytes !== batch.length) return false;
  return computeBatchCrc(batch) === header.crc32c;
}

/** The headers of every message that has none: one frozen list instead of an empty one per message. */
const noHeaders: readonly RecordHeader[] = Object.freeze([]);

/** Decodes the messages of one whole, verified batch; a compressed one is decompressed first. */
export function decodeMessages(batch: Uint8Array): StoredMessage[] {
  const header = decodeBatchHeader(batch);
  assert(header !== null && header.lengthBytes === batch.length, "decodeMessages needs one whole batch");
  const records = header.compressionCode === 0
    ? batch.subarray(batchHeaderBytes)
    : decompressRecords(header.compressionCode, batch.subarray(batchHeaderBytes));
  const baseTimestampMs = header.baseTimestampUs / 1000;
  const messages: StoredMessage[] = [];
  let at = 0;
  for (let i = 0; i < header.messageCount; i++) {
    const { record, next } = decodeRecord(records, at);
    messages.push({
      offset: header.baseOffset + record.offsetDelta,
      // With log append time, every record's timestamp is the batch's max timestamp.
      timestampMs: header.logAppendTime
        ? header.maxTimestampUs / 1000
        : baseTimestampMs + record.timestampDelta,
      // Views, not copies: every read allocates a fresh window, so nothing else writes under them.
      key: record.key,
      headers: record.headers.length === 0 ? noHeaders : record.headers,
      payload: record.value,
    });
    at = next;
  }
  if (at !== records.length) {
    throw new RecordBatchError(
      "corrupt",
      `${records.length - at} bytes follow the batch's ${header.messageCount} records`,
    );
  }
  return messages;
}
