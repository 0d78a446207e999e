import {
  copyBack,
  corrupt,
  type DecompressionSteps,
  readUintLe,
  type StepLimits,
  tooLarge,
} from "./decompression_steps.ts";

/**
 * Kafka's snappy (compression code 2), in either of its two shapes: raw Snappy (librdkafka: the
 * whole records as one block, its uncompressed length first), or the xerial framing Java clients
 * write (a 16-byte header, then blocks of a big-endian int32 length and raw Snappy, each 32 KiB of
 * records by default). A block is decoded element by element into a buffer of the length it
 * declares, and a step stops after one piece of output wherever it falls, within a literal too.
 */

const xerialMagic = [0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00];
const xerialHeaderBytes = 16;
/** Literals up to this long are copied byte by byte: shorter than a `set` of a view costs. */
const byteCopyBytesMax = 32;

/** True when `bytes` start with the xerial header (raw Snappy never does in practice). */
export function isXerial(bytes: Uint8Array): boolean {
  return bytes.length >= xerialHeaderBytes && xerialMagic.every((b, i) => bytes[i] === b);
}

/** The steps of `input`'s snappy records, raw or framed. */
export function snappySteps(input: Uint8Array, limits: StepLimits): DecompressionSteps {
  return isXerial(input) ? new XerialSteps(input, limits) : new RawSnappySteps(input, limits);
}

/** Raw Snappy: one block over the whole input. */
class RawSnappySteps implements DecompressionSteps {
  readonly #block: SnappyBlock;
  readonly #limits: StepLimits;

  constructor(input: Uint8Array, limits: StepLimits) {
    this.#block = new SnappyBlock(input, 0, input.length, limits.outputBytesMax, limits);
    this.#limits = limits;
  }

  get done(): boolean {
    return this.#block.done;
  }

  close(): void {}

  next(): Uint8Array[] {
    const chunk = this.#block.run(this.#limits.pieceBytes);
    return chunk.length > 0 ? [chunk] : [];
  }
}

/** The xerial framing: blocks one after the other, each its own raw Snappy. */
class XerialSteps implements DecompressionSteps {
  readonly #input: Uint8Array;
  readonly #limits: StepLimits;
  readonly #view: DataView;
  #at = xerialHeaderBytes;
  #block: SnappyBlock | null = null;
  #producedBytes = 0;
  #done = false;

  constructor(input: Uint8Array, limits: StepLimits) {
    this.#input = input;
    this.#limits = limits;
    this.#view = new DataView(input.buffer, input.byteOffset, input.byteLength);
  }

  get done(): boolean {
    return this.#done;
  }

  close(): void {}

  next(): Uint8Array[] {
    const out: Uint8Array[] = [];
    const piece = this.#limits.pieceBytes;
    const startedAt = this.#at;
    let produced = 0;
    // Every pass produces output or starts a block (at least 4 bytes of input): the input bounds it.
    while (!this.#done && produced < piece && this.#at - startedAt < piece) {
      if (this.#block === null) {
        if (this.#at === this.#input.length) this.#done = true;
        else this.#block = this.#openBlock();
        continue;
      }
      const chunk = this.#block.run(piece - produced);
      if (chunk.length > 0) out.push(chunk);
      produced += chunk.length;
      this.#producedBytes += chunk.length;
      if (this.#block.done) {
        this.#at = this.#block.end;
        this.#block = null;
      }
    }
    return out;
  }

  #openBlock(): SnappyBlock {
    const at = this.#at;
    if (at + 4 > this.#input.length) throw corrupt("its snappy framing is truncated");
    const length = this.#view.getInt32(at);
    if (length < 0 || at + 4 + length > this.#input.length) {
      throw corrupt("its snappy block runs past the batch");
    }
    const outputBytesMax = this.#limits.outputBytesMax - this.#producedBytes;
    return new SnappyBlock(this.#input, at + 4, at + 4 + length, outputBytesMax, this.#limits);
  }
}

/**
 * One raw Snappy block from `start` to `end` of `input`: its uncompressed length (a varint), then
 * literals and copies (of 1 to 64 bytes, from up to 2^32 back). Decoded into one buffer of the
 * declared length, refused up front when that is past `outputBytesMax`.
 */
class SnappyBlock {
  readonly end: number;
  readonly #input: Uint8Array;
  readonly #output: Uint8Array;
  #inputAt: number;
  #outputAt = 0;
  /** Literal bytes a step's end cut off, still to copy; or copy bytes, and their distance. */
  #literal = 0;
  #copy = 0;
  #distance = 0;

  constructor(input: Uint8Array, start: number, end: number, outputBytesMax: number, limits: StepLimits) {
    this.#input = input;
    this.end = end;
    const { value, next } = uncompressedLength(input, start, end);
    if (value > outputBytesMax) throw tooLarge(limits);
    this.#output = new Uint8Array(value);
    this.#inputAt = next;
  }

  get done(): boolean {
    return this.#outputAt === this.#output.length && this.#inputAt === this.end;
  }

  /**
   * Decodes up to `budget` more bytes, reading about `budget` of input at most (a copy of one byte
   * may take five); returns them (a view of the block's buffer). Whole elements are decoded in a
   * loop over locals; the one the step's end cuts is kept to finish first in the next step.
   */
  run(budget: number): Uint8Array {
    const from = this.#outputAt;
    const stop = Math.min(this.#output.length, from + budget);
    const inputStop = Math.min(this.end, this.#inputAt + budget);
    this.#finishCut(stop);
    const input = this.#input;
    const output = this.#output;
    const end = this.end;
    let inAt = this.#inputAt;
    let outAt = this.#outputAt;
    while (outAt < stop && inAt < inputStop) {
      const tag = input[inAt++]!;
      let length = (tag >> 2) + 1;
      if ((tag & 3) === 0) {
        if (length > 60) {
          const bytes = length - 60;
          if (end - inAt < bytes) throw truncated();
          length = readUintLe(input, inAt, bytes) + 1;
          inAt += bytes;
        }
        if (length > end - inAt) throw corrupt("a snappy literal runs past its block");
        if (length > output.length - outAt) throw this.#overflow();
        const n = Math.min(length, stop - outAt);
        if (n <= byteCopyBytesMax) { for (let i = 0; i < n; i++) output[outAt + i] = input[inAt + i]!; }
        else output.set(input.subarray(inAt, inAt + n), outAt);
        inAt += n;
        outAt += n;
        this.#literal = length - n;
        continue;
      }
      let distance: number;
      if ((tag & 3) === 1) {
        if (inAt === end) throw truncated();
        length = ((tag >> 2) & 7) + 4;
        distance = ((tag >> 5) << 8) | input[inAt++]!;
      } else {
        const bytes = (tag & 3) === 2 ? 2 : 4;
        if (end - inAt < bytes) throw truncated();
        distance = readUintLe(input, inAt, bytes);
        inAt += bytes;
      }
      if (distance === 0 || distance > outAt) throw corrupt("a snappy copy reaches before its block");
      if (length > output.length - outAt) throw this.#overflow();
      const n = Math.min(length, stop - outAt);
      for (let i = 0; i < n; i++) output[outAt + i] = output[outAt - distance + i]!;
      outAt += n;
      this.#copy = length - n;
      this.#distance = distance;
    }
    this.#inputAt = inAt;
    this.#outputAt = outAt;
    this.#checkEnd();
    return output.subarray(from, outAt);
  }

  /** Copies what the last step's end cut off of a literal or a copy, up to `stop`. */
  #finishCut(stop: number): void {
    const n = Math.min(this.#literal + this.#copy, stop - this.#outputAt);
    if (this.#literal > 0) {
      this.#output.set(this.#input.subarray(this.#inputAt, this.#inputAt + n), this.#outputAt);
      this.#inputAt += n;
      this.#literal -= n;
    } else if (this.#copy > 0) {
      copyBack(this.#output, this.#outputAt, this.#distance, n);
      this.#copy -= n;
    }
    this.#outputAt += n;
  }

  #checkEnd(): void {
    const full = this.#outputAt === this.#output.length;
    if (full && this.#inputAt !== this.end) {
      throw corrupt("its snappy block goes on past its declared length");
    }
    if (!full && this.#inputAt === this.end && this.#literal + this.#copy === 0) {
      throw corrupt(`its snappy block ends at ${this.#outputAt} of its ${this.#output.length} bytes`);
    }
  }

  #overflow(): Error {
    return corrupt(`its snappy block decodes past its declared ${this.#output.length} bytes`);
  }
}

function truncated(): Error {
  return corrupt("a snappy element runs past its block");
}

/** The varint (at most five bytes, 32 bits) a raw Snappy block starts with. */
function uncompressedLength(input: Uint8Array, start: number, end: number): { value: number; next: number } {
  let value = 0;
  for (let i = 0; i < 5; i++) {
    if (start + i >= end) break;
    const byte = input[start + i]!;
    value += (byte & 0x7f) * 2 ** (7 * i);
    if (byte < 0x80) {
      if (value > 0xffffffff) break;
      return { value, next: start + i + 1 };
    }
  }
  throw corrupt("its snappy block has no uncompressed length");
}
