import { assert } from "../runtime/assert.ts";
import { type BatchRecord, decodeRecord, recordBatchBytes, writeRecordBatch } from "./batch_records.ts";
import {
  batchField,
  batchLengthOverheadBytes,
  computeBatchCrc,
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

export interface MessageInput {
  key: string | null;
  headers: Record<string, string>;
  payload: Uint8Array;
}

export interface StoredMessage {
  offset: number;
  timestampUs: number;
  key: string | null;
  headers: Record<string, string>;
  payload: Uint8Array;
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
const decoder = new TextDecoder("utf-8", { fatal: true });

/** Messages measured for a batch: their records and the batch's whole length. */
export interface PreparedBatch {
  readonly records: readonly BatchRecord[];
  readonly lengthBytes: number;
}

/** Encodes the keys and headers of `messages` and measures the batch they make. */
export function prepareBatch(messages: readonly MessageInput[]): PreparedBatch {
  assert(messages.length > 0, "Cannot encode an empty batch");
  const records = messages.map((m, offsetDelta): BatchRecord => ({
    offsetDelta,
    timestampDelta: 0,
    key: m.key === null ? null : encoder.encode(m.key),
    value: m.payload,
    headers: Object.entries(m.headers).map(([name, value]) => ({ name, value: encoder.encode(value) })),
  }));
  return { records, lengthBytes: recordBatchBytes(records) };
}

/**
 * Writes a prepared batch into `target`, exactly its length: the log encodes straight into its
 * write buffer, so a produce costs no buffer of its own. Every message gets the batch's timestamp,
 * `timestampUs` in whole milliseconds.
 */
export function writeBatchInto(
  target: Uint8Array,
  baseOffset: number,
  timestampUs: number,
  batch: PreparedBatch,
): void {
  assert(Number.isSafeInteger(baseOffset) && baseOffset >= 0, "batch base offset must be a safe integer");
  assert(target.length === batch.lengthBytes, "a batch's target must be exactly its length");
  assert(timestampUs % 1000 === 0, "batch timestamps are whole milliseconds");
  const timestampMs = timestampUs / 1000;
  writeRecordBatch(target, batch.records, {
    baseOffset,
    baseTimestampMs: timestampMs,
    maxTimestampMs: timestampMs,
    timestampType: "create_time",
  });
}

/** Encodes messages as one batch of its own; every message gets the batch's timestamp. */
export function encodeBatch(
  baseOffset: number,
  timestampUs: number,
  messages: readonly MessageInput[],
): Uint8Array {
  const batch = prepareBatch(messages);
  const bytes = new Uint8Array(batch.lengthBytes);
  writeBatchInto(bytes, baseOffset, timestampUs, batch);
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

/**
 * The headers of every message that has none: one frozen object instead of an empty one per
 * message decoded (100 for a poll of 100 messages), so a reader that tried to add to it would
 * throw rather than change other messages.
 */
const noHeaders: Record<string, string> = Object.freeze({});

/** Decodes the messages of one whole, verified, uncompressed batch. */
export function decodeMessages(batch: Uint8Array): StoredMessage[] {
  const header = decodeBatchHeader(batch);
  assert(header !== null && header.lengthBytes === batch.length, "decodeMessages needs one whole batch");
  assert(header.compressionCode === 0, "decodeMessages reads uncompressed batches");
  const messages: StoredMessage[] = [];
  let at = batchHeaderBytes;
  for (let i = 0; i < header.messageCount; i++) {
    const { record, next } = decodeRecord(batch, at);
    const headers: Record<string, string> = record.headers.length === 0 ? noHeaders : {};
    for (const h of record.headers) headers[h.name] = h.value === null ? "" : decoder.decode(h.value);
    messages.push({
      offset: header.baseOffset + record.offsetDelta,
      timestampUs: header.logAppendTime
        ? header.maxTimestampUs
        : header.baseTimestampUs + record.timestampDelta * 1000,
      key: record.key === null ? null : decoder.decode(record.key),
      headers,
      // A view, not a copy: every read allocates a fresh window, so nothing else writes under it.
      payload: record.value ?? new Uint8Array(0),
    });
    at = next;
  }
  assert(at === batch.length, "records do not fill their batch");
  return messages;
}
