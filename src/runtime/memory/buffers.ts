import { assert } from "../assert.ts";

export interface BufferPoolOptions {
  /** The size of every pooled buffer; a request for more gets a buffer of its own, never pooled. */
  bufferBytes: number;
  /** Bound on the buffers kept for reuse. */
  buffersMax: number;
}

/**
 * Buffers of one size, lent and given back: a poll's remote window borrows one and gives it back
 * once its answer is encoded, so a busy shard does not hand the garbage collector 128 KiB per poll.
 * Only a buffer this pool lent, and has not had back since, is taken back: a second give, or a
 * buffer from elsewhere, is ignored, so a mistaken release cannot lend one buffer to two readers.
 */
export class BufferPool {
  readonly bufferBytes: number;
  readonly #buffersMax: number;
  readonly #free: ArrayBuffer[] = [];
  readonly #lent = new WeakSet<ArrayBuffer>();
  #lentCount = 0;

  constructor(options: BufferPoolOptions) {
    assert(options.bufferBytes > 0 && options.buffersMax >= 0, "Cannot make a buffer pool: bad sizes");
    this.bufferBytes = options.bufferBytes;
    this.#buffersMax = options.buffersMax;
  }

  /** Gauge: buffers kept for reuse. */
  get freeCount(): number {
    return this.#free.length;
  }

  /** Gauge: pooled buffers lent and not yet given back. */
  get lentCount(): number {
    return this.#lentCount;
  }

  /** A zero-based view of `lengthBytes`; from the pool when it fits a pooled buffer. */
  take(lengthBytes: number): Uint8Array {
    assert(lengthBytes >= 0, "Cannot take a buffer of negative length");
    if (lengthBytes > this.bufferBytes) return new Uint8Array(lengthBytes);
    return this.#lend(this.#free.pop() ?? new ArrayBuffer(this.bufferBytes), lengthBytes);
  }

  /**
   * Like `take`, but never makes a buffer that would put more than `buffersMax` out at once: null
   * then, and the caller makes do with a buffer of its own size. A pool of big buffers shared by
   * many writers stays `buffersMax` buffers however many write at once.
   */
  takeBounded(lengthBytes: number): Uint8Array | null {
    assert(lengthBytes >= 0, "Cannot take a buffer of negative length");
    if (lengthBytes > this.bufferBytes) return null;
    const free = this.#free.pop();
    if (free !== undefined) return this.#lend(free, lengthBytes);
    if (this.#lentCount >= this.#buffersMax) return null;
    return this.#lend(new ArrayBuffer(this.bufferBytes), lengthBytes);
  }

  /** Takes back the buffer under `view`; nothing may read it afterwards. */
  give(view: Uint8Array): void {
    const buffer = view.buffer;
    if (!(buffer instanceof ArrayBuffer) || !this.#lent.has(buffer)) return;
    this.#lent.delete(buffer);
    this.#lentCount--;
    if (this.#free.length < this.#buffersMax) this.#free.push(buffer);
  }

  /**
   * Takes back a lent buffer whose memory a transfer moved to `moved` (a BYOB read detaches the
   * buffer it is given and answers with a new one over the same memory): `moved` is kept in its
   * place. Without it the pool would count `lent` out for ever.
   */
  giveMoved(lent: ArrayBuffer, moved: ArrayBuffer): void {
    if (!this.#lent.has(lent)) return;
    assert(moved.byteLength === this.bufferBytes, "Cannot take back a moved buffer: its size changed");
    this.#lent.delete(lent);
    this.#lent.add(moved);
    this.give(new Uint8Array(moved));
  }

  /** Stops counting a lent buffer that cannot come back (a failed read kept it): the bound stays true. */
  forget(lent: ArrayBuffer): void {
    if (!this.#lent.has(lent)) return;
    this.#lent.delete(lent);
    this.#lentCount--;
  }

  #lend(buffer: ArrayBuffer, lengthBytes: number): Uint8Array {
    this.#lent.add(buffer);
    this.#lentCount++;
    return new Uint8Array(buffer, 0, lengthBytes);
  }
}

/** Joins byte pieces into one buffer; `totalBytes` saves a pass when the caller already knows it. */
export function concatBytes(pieces: readonly Uint8Array[], totalBytes?: number): Uint8Array {
  const out = new Uint8Array(totalBytes ?? pieces.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.length;
  }
  return out;
}

/**
 * Frees an `ArrayBuffer`'s memory now instead of at a later garbage collection, where the runtime
 * can: `transfer(0)` detaches the buffer, and the engine lets go of its memory at once unless
 * something else still holds it (a write of it in flight keeps its own hold until it is done).
 * Every view of the buffer reads as empty afterwards, so only the buffer's last user may call it.
 *
 * Why: a poll's answer is an `ArrayBuffer` of its own, about 100 KiB, made for each poll. Once it is
 * sent it is garbage, but the engine frees it only when a minor collection finds it dead, and in
 * the pump benchmark's storm the answers that died between two collections added about ten
 * megabytes to the process (docs/TUNING.md, "Poll answers").
 *
 * Returns whether the memory was let go: false where the runtime has no `transfer` (Node 20; the
 * collector frees it in time) or the buffer was already detached.
 */
export function freeArrayBuffer(buffer: ArrayBuffer): boolean {
  const transferable = buffer as ArrayBuffer & {
    transfer?: (length: number) => ArrayBuffer;
    detached?: boolean;
  };
  if (typeof transferable.transfer !== "function" || transferable.detached === true) return false;
  transferable.transfer(0);
  return true;
}
