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
