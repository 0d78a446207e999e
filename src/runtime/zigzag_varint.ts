/**
 * Zigzag varints as Kafka's records frame their fields (protobuf's encoding): the sign folded into
 * the low bit, then seven bits per byte, low groups first, the high bit set on every byte but the
 * last. Values are JavaScript numbers, exact in [-2^52, 2^52) when written, which holds every length, delta and
 * millisecond timestamp a record carries. Reading past the end or a varint longer than `bytesMax`
 * returns null, so a parser can tell a truncated or malformed field from a value.
 */

/** Bytes of the longest varint a 64-bit value takes. */
export const varlongBytesMax = 10;

/** Bytes of the longest varint a 32-bit value takes. */
export const varintBytesMax = 5;

/** A value read, and the position after it. */
export interface VarintRead {
  value: number;
  next: number;
}

/** Reads a zigzag varint at `at`; null when truncated, longer than `bytesMax`, or beyond ±2^53. */
export function readZigzag(bytes: Uint8Array, at: number, bytesMax = varlongBytesMax): VarintRead | null {
  const read = { value: 0, next: 0 };
  return readZigzagInto(bytes, at, bytes.length, bytesMax, read) ? read : null;
}

/**
 * `readZigzag` reading no further than `end`, into `read` (which a caller may reuse for every field,
 * making no object per read); false when truncated, longer than `bytesMax`, or beyond ±2^53.
 */
export function readZigzagInto(
  bytes: Uint8Array,
  at: number,
  end: number,
  bytesMax: number,
  read: VarintRead,
): boolean {
  let unsigned = 0;
  let scale = 1;
  for (let i = 0; i < bytesMax && at + i < end; i++) {
    const byte = bytes[at + i]!;
    unsigned += (byte & 0x7f) * scale;
    if (unsigned > Number.MAX_SAFE_INTEGER) return false;
    if ((byte & 0x80) === 0) {
      // Zigzag: even values are non-negative, odd ones negative.
      read.value = unsigned % 2 === 0 ? unsigned / 2 : -(unsigned + 1) / 2;
      read.next = at + i + 1;
      return true;
    }
    scale *= 128;
  }
  return false;
}

/** The bytes `writeZigzag` takes for `value`. */
export function zigzagBytes(value: number): number {
  let unsigned = zigzagOf(value);
  let bytes = 1;
  while (unsigned >= 128) {
    unsigned = Math.floor(unsigned / 128);
    bytes++;
  }
  return bytes;
}

/** Writes `value` at `at` as a zigzag varint; returns the position after it. */
export function writeZigzag(bytes: Uint8Array, at: number, value: number): number {
  let unsigned = zigzagOf(value);
  let place = at;
  while (unsigned >= 128) {
    bytes[place++] = (unsigned % 128) | 0x80;
    unsigned = Math.floor(unsigned / 128);
  }
  bytes[place++] = unsigned;
  return place;
}

function zigzagOf(value: number): number {
  const unsigned = value >= 0 ? value * 2 : -value * 2 - 1;
  if (!Number.isSafeInteger(value) || !Number.isSafeInteger(unsigned)) {
    throw new RangeError(`Cannot encode ${value} as a varint: not an integer in [-2^52, 2^52)`);
  }
  return unsigned;
}
