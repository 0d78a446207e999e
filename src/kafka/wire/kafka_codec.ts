/**
 * Reads Kafka's protocol primitives from one frame, front to back: fixed-width big-endian integers,
 * unsigned varints (the compact lengths of flexible versions), strings, byte arrays, arrays and
 * tagged fields. A field that runs past the frame, a negative length other than null's -1, or a
 * count larger than the bytes left could hold throws `KafkaDecodeError`, which closes the
 * connection: nothing is read past the frame and no count allocates more than the frame could hold.
 */
export class KafkaDecodeError extends Error {
  override name = "KafkaDecodeError";
  constructor(reason: string, options?: ErrorOptions) {
    super(`Cannot decode Kafka request: ${reason}`, options);
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Bound on the tagged fields one structure may carry. */
const taggedFieldsMax = 64;

export class KafkaReader {
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  #at: number;

  constructor(bytes: Uint8Array, at = 0) {
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.#at = at;
  }

  /** Where the next field starts. */
  get position(): number {
    return this.#at;
  }

  get remaining(): number {
    return this.#bytes.length - this.#at;
  }

  int8(): number {
    return this.#view.getInt8(this.#take(1));
  }

  int16(): number {
    return this.#view.getInt16(this.#take(2));
  }

  int32(): number {
    return this.#view.getInt32(this.#take(4));
  }

  /** An int64 that must be exact as a number (offsets, timestamps, ids); beyond ±2^53 is refused. */
  int64(): number {
    const value = this.#view.getBigInt64(this.#take(8));
    if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
      throw new KafkaDecodeError(`an int64 of ${value} is beyond ±2^53`);
    }
    return Number(value);
  }

  boolean(): boolean {
    return this.int8() !== 0;
  }

  /** An unsigned varint of at most 5 bytes (32 bits). */
  uvarint(): number {
    let value = 0;
    for (let i = 0; i < 5; i++) {
      const byte = this.#bytes[this.#take(1)]!;
      value += (byte & 0x7f) * 2 ** (7 * i);
      if ((byte & 0x80) === 0) return value;
    }
    throw new KafkaDecodeError("an unsigned varint is longer than 5 bytes");
  }

  /** An int16-length string; null for length -1. */
  nullableString(): string | null {
    return this.#text(this.int16());
  }

  string(): string {
    const text = this.nullableString();
    if (text === null) throw new KafkaDecodeError("a string that may not be null is null");
    return text;
  }

  /** A compact string (length + 1 as an unsigned varint); null for 0. */
  compactNullableString(): string | null {
    return this.#text(this.uvarint() - 1);
  }

  compactString(): string {
    const text = this.compactNullableString();
    if (text === null) throw new KafkaDecodeError("a compact string that may not be null is null");
    return text;
  }

  /** int32-length bytes; null for -1. A view into the frame, not a copy. */
  nullableBytes(): Uint8Array | null {
    return this.#slice(this.int32());
  }

  compactNullableBytes(): Uint8Array | null {
    return this.#slice(this.uvarint() - 1);
  }

  /** An int32-count array of items, each at least `itemBytesMin` bytes; null for -1. */
  nullableArray<T>(item: (reader: KafkaReader) => T, itemBytesMin = 1): T[] | null {
    return this.#items(this.int32(), item, itemBytesMin);
  }

  array<T>(item: (reader: KafkaReader) => T, itemBytesMin = 1): T[] {
    const items = this.nullableArray(item, itemBytesMin);
    if (items === null) throw new KafkaDecodeError("an array that may not be null is null");
    return items;
  }

  /** A compact array (count + 1 as an unsigned varint), null for 0. */
  compactNullableArray<T>(item: (reader: KafkaReader) => T, itemBytesMin = 1): T[] | null {
    return this.#items(this.uvarint() - 1, item, itemBytesMin);
  }

  /** A compact array (count + 1 as an unsigned varint); null for 0. */
  compactArray<T>(item: (reader: KafkaReader) => T, itemBytesMin = 1): T[] {
    const items = this.#items(this.uvarint() - 1, item, itemBytesMin);
    if (items === null) throw new KafkaDecodeError("a compact array that may not be null is null");
    return items;
  }

  /** Skips a flexible version's tagged fields: none is one the server reads. */
  skipTaggedFields(): void {
    const count = this.uvarint();
    if (count > taggedFieldsMax) {
      throw new KafkaDecodeError(`${count} tagged fields are more than ${taggedFieldsMax}`);
    }
    for (let i = 0; i < count; i++) {
      this.uvarint();
      this.#take(this.uvarint());
    }
  }

  #text(length: number): string | null {
    const bytes = this.#slice(length);
    if (bytes === null) return null;
    try {
      return utf8.decode(bytes);
    } catch (error) {
      // The strict decoder's TypeError for bytes that are not UTF-8: a malformed request.
      throw new KafkaDecodeError("a string is not UTF-8", { cause: error });
    }
  }

  #slice(length: number): Uint8Array | null {
    if (length === -1) return null;
    if (length < -1) throw new KafkaDecodeError(`a length of ${length}`);
    const at = this.#take(length);
    return this.#bytes.subarray(at, at + length);
  }

  #items<T>(count: number, item: (reader: KafkaReader) => T, itemBytesMin: number): T[] | null {
    if (count === -1) return null;
    if (count < -1) throw new KafkaDecodeError(`an array count of ${count}`);
    // A count the bytes left cannot hold is refused before anything is allocated for it.
    if (count * itemBytesMin > this.remaining) {
      throw new KafkaDecodeError(`an array of ${count} items in ${this.remaining} bytes`);
    }
    const items: T[] = [];
    for (let i = 0; i < count; i++) items.push(item(this));
    return items;
  }

  /** Claims `length` bytes at the current position and returns where they start. */
  #take(length: number): number {
    if (length > this.remaining) {
      throw new KafkaDecodeError(`a field of ${length} bytes runs past the frame's ${this.remaining} left`);
    }
    const at = this.#at;
    this.#at += length;
    return at;
  }
}

/**
 * Writes Kafka's protocol primitives into a buffer that grows by doubling, up to `bytesMax`: a
 * response that would outgrow it throws rather than allocate without bound. Record batches are
 * not copied through it; a response that carries them is sent as its parts (`bytes` returns this
 * writer's part).
 */
export class KafkaWriter {
  readonly #bytesMax: number;
  #buffer: Uint8Array;
  #view: DataView;
  #at = 0;

  constructor(bytesMax: number, initialBytes = 256) {
    if (!(bytesMax >= 1)) throw new RangeError(`Cannot make a writer of ${bytesMax} bytes`);
    this.#bytesMax = bytesMax;
    this.#buffer = new Uint8Array(Math.min(initialBytes, bytesMax));
    this.#view = new DataView(this.#buffer.buffer);
  }

  get length(): number {
    return this.#at;
  }

  /** What was written, as a view of the buffer. */
  bytes(): Uint8Array {
    return this.#buffer.subarray(0, this.#at);
  }

  int8(value: number): this {
    const at = this.#room(1);
    this.#view.setInt8(at, value);
    return this;
  }

  int16(value: number): this {
    const at = this.#room(2);
    this.#view.setInt16(at, value);
    return this;
  }

  int32(value: number): this {
    const at = this.#room(4);
    this.#view.setInt32(at, value);
    return this;
  }

  int64(value: number): this {
    const at = this.#room(8);
    this.#view.setBigInt64(at, BigInt(value));
    return this;
  }

  boolean(value: boolean): this {
    return this.int8(value ? 1 : 0);
  }

  uvarint(value: number): this {
    if (!Number.isSafeInteger(value) || value < 0 || value > 0xffffffff) {
      throw new RangeError(`Cannot write ${value} as an unsigned varint`);
    }
    let rest = value;
    while (rest >= 0x80) {
      const at = this.#room(1);
      this.#buffer[at] = (rest % 0x80) | 0x80;
      rest = Math.floor(rest / 0x80);
    }
    const last = this.#room(1);
    this.#buffer[last] = rest;
    return this;
  }

  nullableString(value: string | null): this {
    if (value === null) return this.int16(-1);
    const bytes = encoder.encode(value);
    if (bytes.length > 0x7fff) throw new RangeError(`Cannot write a string of ${bytes.length} bytes`);
    return this.int16(bytes.length).raw(bytes);
  }

  compactNullableString(value: string | null): this {
    if (value === null) return this.uvarint(0);
    const bytes = encoder.encode(value);
    return this.uvarint(bytes.length + 1).raw(bytes);
  }

  nullableBytes(value: Uint8Array | null): this {
    if (value === null) return this.int32(-1);
    return this.int32(value.length).raw(value);
  }

  compactNullableBytes(value: Uint8Array | null): this {
    if (value === null) return this.uvarint(0);
    return this.uvarint(value.length + 1).raw(value);
  }

  /** An int32-count array, each item written by `item`. */
  array<T>(items: readonly T[], item: (writer: this, value: T) => void): this {
    this.int32(items.length);
    for (const value of items) item(this, value);
    return this;
  }

  compactArray<T>(items: readonly T[], item: (writer: this, value: T) => void): this {
    this.uvarint(items.length + 1);
    for (const value of items) item(this, value);
    return this;
  }

  /** No tagged fields: the server sets none. */
  emptyTaggedFields(): this {
    return this.uvarint(0);
  }

  raw(bytes: Uint8Array): this {
    const at = this.#room(bytes.length);
    this.#buffer.set(bytes, at);
    return this;
  }

  /** Writes an int32 at `at`, for a length known only once what follows is written. */
  int32At(at: number, value: number): this {
    if (at < 0 || at + 4 > this.#at) throw new RangeError(`Cannot write an int32 at ${at} of ${this.#at}`);
    this.#view.setInt32(at, value);
    return this;
  }

  /**
   * Claims `length` bytes at the end, growing the buffer, and returns where they start. Callers take
   * the position before they touch `#buffer` or `#view`, which a growth replaces.
   */
  #room(length: number): number {
    const needed = this.#at + length;
    if (needed > this.#bytesMax) {
      throw new RangeError(`Cannot write a Kafka response over ${this.#bytesMax} bytes`);
    }
    if (needed > this.#buffer.length) {
      let size = this.#buffer.length;
      while (size < needed) size *= 2;
      const grown = new Uint8Array(Math.min(size, this.#bytesMax));
      grown.set(this.#buffer.subarray(0, this.#at));
      this.#buffer = grown;
      this.#view = new DataView(grown.buffer);
    }
    const at = this.#at;
    this.#at = needed;
    return at;
  }
}

const encoder = new TextEncoder();
