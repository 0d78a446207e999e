import { assert } from "../runtime/assert.ts";
import { crc32c } from "../runtime/crc32c.ts";

/**
 * The on-disk message batch (docs/FORMAT.md). All integers little-endian.
 *
 *   0  base_offset        u64   offset of the first message
 *   8  length             u32   whole batch in bytes, header included
 *  12  crc32c             u32   CRC32C of bytes [16, length)
 *  16  format_version     u8    1
 *  17  attributes         u8    0 (reserved for compression)
 *  18  reserved           u16
 *  20  message_count      u32
 *  24  base_timestamp_us  u64   microseconds since the Unix epoch
 *  32  max_timestamp_us   u64
 *  40  last_offset_delta  u32   message_count - 1
 *  44  reserved           u32
 *  48  messages
 *
 * A message: record_length u32 (bytes after this field), offset_delta u32, timestamp_delta_us u32,
 * key_length i32 (-1 when absent) and key (UTF-8), header_count u16 and per header name_length u16,
 * name (UTF-8), value_length u32, value (UTF-8), then payload_length u32 and payload.
 */
export const batchHeaderBytes = 48;
export const batchFormatVersion = 1;

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
  formatVersion: number;
  messageCount: number;
  baseTimestampUs: number;
  maxTimestampUs: number;
  lastOffsetDelta: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** Messages measured for a batch: their encoded parts and the batch's whole length. */
export interface PreparedBatch {
  readonly parts: readonly MessageParts[];
  readonly lengthBytes: number;
}

/** Encodes the keys and headers of `messages` and measures the batch they make. */
export function prepareBatch(messages: readonly MessageInput[]): PreparedBatch {
  assert(messages.length > 0, "Cannot encode an empty batch");
  const parts = messages.map((m) => encodeMessageParts(m));
  const lengthBytes = batchHeaderBytes + parts.reduce((sum, p) => sum + 4 + recordBytes(p), 0);
  return { parts, lengthBytes };
}

/**
 * Writes a prepared batch into `target`, exactly its length: the log encodes straight into its
 * write buffer, so a produce costs no buffer of its own. Every message gets the batch's timestamp.
 */
export function writeBatchInto(
  target: Uint8Array,
  baseOffset: number,
  timestampUs: number,
  batch: PreparedBatch,
): void {
  assert(Number.isSafeInteger(baseOffset) && baseOffset >= 0, "batch base offset must be a safe integer");
  assert(target.length === batch.lengthBytes, "a batch's target must be exactly its length");
  const count = batch.parts.length;
  const view = new DataView(target.buffer, target.byteOffset, target.byteLength);
  view.setBigUint64(0, BigInt(baseOffset), true);
  view.setUint32(8, batch.lengthBytes, true);
  target[16] = batchFormatVersion;
  target[17] = 0;
  view.setUint16(18, 0, true);
  view.setUint32(20, count, true);
  view.setBigUint64(24, BigInt(timestampUs), true);
  view.setBigUint64(32, BigInt(timestampUs), true);
  view.setUint32(40, count - 1, true);
  view.setUint32(44, 0, true);
  let pos = batchHeaderBytes;
  batch.parts.forEach((parts, delta) => {
    pos = writeMessage(target, view, pos, delta, parts);
  });
  assert(pos === batch.lengthBytes, "batch length accounting is wrong");
  view.setUint32(12, crc32c(target.subarray(16)), true);
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

/** Reads a batch header at `pos`, or null when fewer than a header's bytes remain. */
export function decodeBatchHeader(bytes: Uint8Array, pos = 0): BatchHeader | null {
  if (bytes.length - pos < batchHeaderBytes) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset + pos, batchHeaderBytes);
  return {
    baseOffset: Number(view.getBigUint64(0, true)),
    lengthBytes: view.getUint32(8, true),
    crc32c: view.getUint32(12, true),
    formatVersion: view.getUint8(16),
    messageCount: view.getUint32(20, true),
    baseTimestampUs: Number(view.getBigUint64(24, true)),
    maxTimestampUs: Number(view.getBigUint64(32, true)),
    lastOffsetDelta: view.getUint32(40, true),
  };
}

/** True when a header is self-consistent; says nothing about the bytes it covers. */
export function isPlausibleHeader(header: BatchHeader): boolean {
  return header.formatVersion === batchFormatVersion &&
    header.lengthBytes >= batchHeaderBytes &&
    header.messageCount >= 1 &&
    header.lastOffsetDelta === header.messageCount - 1 &&
    header.maxTimestampUs >= header.baseTimestampUs;
}

/** True when `batch` (exactly one whole batch) carries a matching CRC32C. */
export function verifyBatch(batch: Uint8Array): boolean {
  const header = decodeBatchHeader(batch);
  if (header === null || header.lengthBytes !== batch.length) return false;
  return crc32c(batch.subarray(16)) === header.crc32c;
}

/**
 * The headers of every message that has none: one frozen object instead of an empty one per
 * message decoded (100 for a poll of 100 messages), so a reader that tried to add to it would
 * throw rather than change other messages.
 */
const noHeaders: Record<string, string> = Object.freeze({});

/** Decodes the messages of one whole, verified batch. */
export function decodeMessages(batch: Uint8Array): StoredMessage[] {
  const header = decodeBatchHeader(batch);
  assert(header !== null && header.lengthBytes === batch.length, "decodeMessages needs one whole batch");
  const view = new DataView(batch.buffer, batch.byteOffset, batch.byteLength);
  const messages: StoredMessage[] = [];
  let pos = batchHeaderBytes;
  for (let i = 0; i < header.messageCount; i++) {
    const recordLength = view.getUint32(pos, true);
    const end = pos + 4 + recordLength;
    assert(end <= batch.length, "message runs past its batch");
    const offsetDelta = view.getUint32(pos + 4, true);
    const timestampDelta = view.getUint32(pos + 8, true);
    const keyLength = view.getInt32(pos + 12, true);
    let p = pos + 16;
    const key = keyLength < 0 ? null : decoder.decode(batch.subarray(p, p += keyLength));
    const headerCount = view.getUint16(p, true);
    p += 2;
    const headers: Record<string, string> = headerCount === 0 ? noHeaders : {};
    for (let h = 0; h < headerCount; h++) {
      const nameLength = view.getUint16(p, true);
      const name = decoder.decode(batch.subarray(p + 2, p += 2 + nameLength));
      const valueLength = view.getUint32(p, true);
      headers[name] = decoder.decode(batch.subarray(p + 4, p += 4 + valueLength));
    }
    const payloadLength = view.getUint32(p, true);
    // A view, not a copy: every read allocates a fresh window, so nothing else writes under it.
    const payload = batch.subarray(p + 4, p + 4 + payloadLength);
    assert(p + 4 + payloadLength === end, "message fields do not fill its record");
    messages.push({
      offset: header.baseOffset + offsetDelta,
      timestampUs: header.baseTimestampUs + timestampDelta,
      key,
      headers,
      payload,
    });
    pos = end;
  }
  return messages;
}

interface MessageParts {
  key: Uint8Array | null;
  headers: [Uint8Array, Uint8Array][];
  payload: Uint8Array;
}

function encodeMessageParts(m: MessageInput): MessageParts {
  return {
    key: m.key === null ? null : encoder.encode(m.key),
    headers: Object.entries(m.headers).map(([k, v]) => [encoder.encode(k), encoder.encode(v)]),
    payload: m.payload,
  };
}

function recordBytes(parts: MessageParts): number {
  const headerBytes = parts.headers.reduce((sum, [k, v]) => sum + 2 + k.length + 4 + v.length, 0);
  return 12 + (parts.key?.length ?? 0) + 2 + headerBytes + 4 + parts.payload.length;
}

function writeMessage(
  bytes: Uint8Array,
  view: DataView,
  start: number,
  delta: number,
  parts: MessageParts,
): number {
  view.setUint32(start, recordBytes(parts), true);
  view.setUint32(start + 4, delta, true);
  view.setUint32(start + 8, 0, true);
  view.setInt32(start + 12, parts.key === null ? -1 : parts.key.length, true);
  let p = start + 16;
  if (parts.key !== null) {
    bytes.set(parts.key, p);
    p += parts.key.length;
  }
  view.setUint16(p, parts.headers.length, true);
  p += 2;
  for (const [name, value] of parts.headers) {
    view.setUint16(p, name.length, true);
    bytes.set(name, p + 2);
    p += 2 + name.length;
    view.setUint32(p, value.length, true);
    bytes.set(value, p + 4);
    p += 4 + value.length;
  }
  view.setUint32(p, parts.payload.length, true);
  bytes.set(parts.payload, p + 4);
  return p + 4 + parts.payload.length;
}
