import { Decompress } from "fzstd";
import {
  corrupt,
  type DecompressionSteps,
  readUintLe,
  type StepLimits,
  tooLarge,
} from "./decompression_steps.ts";
import * as zlib from "node:zlib";
import { assert } from "../../runtime/assert.ts";
import { NativeZlibStream } from "./gzip_steps.ts";

/**
 * Kafka's zstd (compression code 4): one or more Zstandard frames, each a header and blocks of at
 * most 128 KiB of output. The frame and block headers are read here, and fzstd's streaming decoder
 * is handed one block at a time, so that a step takes whole blocks up to one piece of output. A
 * block is the least a step can take: fzstd cannot stop within one. After each block fzstd shifts
 * its window (the frame's window size) by the block's length, a cost that grows with the window;
 * a window past `outputBytesMax` is declared smaller to it (no output within the bound can reach
 * further back), so fzstd never holds more. The content checksum is skipped (the batch's CRC32C
 * covers it).
 */

const frameMagic = 0xfd2fb528;
/** Skippable frames carry any magic of 0x184D2A50 to 0x184D2A5F, then their length. */
const skippableMagic = 0x184d2a50;
const skippableMagicMask = 0xfffffff0;
/** A block's output, at most (Zstandard's Block_Maximum_Size; less when the window is smaller). */
const blockBytesMax = 128 * 1024;
/** Block type 3 is reserved. */
const reservedBlockType = 3;
/** Block type 1 (RLE) holds one byte, repeated the block's size times. */
const rleBlockType = 1;
/** The smallest window exponent a descriptor encodes: 2^10 bytes. */
const windowLogMin = 10;

interface Frame {
  decoder: Decompress;
  blockBytesMax: number;
  checksum: boolean;
  contentBytes: number | null;
  producedBytes: number;
  /** The frame's header (its window declared smaller if need be), sent with its first block. */
  header: Uint8Array | null;
}

export class ZstdSteps implements DecompressionSteps {
  readonly #input: Uint8Array;
  readonly #limits: StepLimits;
  /** Where the next frame or block header starts. */
  #at = 0;
  #frame: Frame | null = null;
  #frames = 0;
  #producedBytes = 0;
  /** What fzstd handed out during one push. */
  readonly #decoded: Uint8Array[] = [];
  #done = false;

  constructor(input: Uint8Array, limits: StepLimits) {
    this.#input = input;
    this.#limits = limits;
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
    // Every pass reads a header or a block (at least 3 bytes of input): the input bounds the loop.
    while (!this.#done && this.#at - startedAt < piece) {
      const frame = this.#frame;
      if (frame === null) {
        if (this.#at < this.#input.length) this.#readFrameHeader();
        else if (this.#frames === 0) throw corrupt("its zstd records hold no frame");
        else this.#done = true;
        continue;
      }
      // A step takes a block only when the block, whatever it decodes to, stays within the piece.
      if (produced > 0 && produced + frame.blockBytesMax > piece) break;
      produced += this.#decodeBlock(frame, out);
    }
    return out;
  }

  #readFrameHeader(): void {
    const input = this.#input;
    const at = this.#at;
    if (input.length - at < 8) throw corrupt("its zstd records end inside a frame header");
    const magic = readUintLe(input, at, 4);
    if ((magic & skippableMagicMask) === skippableMagic) {
      const end = at + 8 + readUintLe(input, at + 4, 4);
      if (end > input.length) throw corrupt("a skippable zstd frame runs past the batch");
      this.#at = end;
      return;
    }
    if (magic !== frameMagic) {
      throw corrupt(`its zstd frame starts with 0x${magic.toString(16)}, no zstd magic`);
    }
    const descriptor = input[at + 4]!;
    const singleSegment = (descriptor & 0x20) !== 0;
    if ((descriptor & 0x08) !== 0) throw corrupt("its zstd frame sets a reserved bit");
    let next = at + 5 + (singleSegment ? 0 : 1);
    const dictionaryBytes = [0, 1, 2, 4][descriptor & 3]!;
    const contentSizeBytes = descriptor >> 6 === 0 ? (singleSegment ? 1 : 0) : 1 << (descriptor >> 6);
    if (input.length - next < dictionaryBytes + contentSizeBytes) {
      throw corrupt("its zstd frame header is cut");
    }
    if (readUintLe(input, next, dictionaryBytes) !== 0) throw corrupt("its zstd frame needs a dictionary");
    next += dictionaryBytes;
    const contentBytes = contentSizeBytes === 0 ? null : readContentSize(input, next, contentSizeBytes);
    next += contentSizeBytes;
    if (contentBytes !== null && contentBytes > this.#limits.outputBytesMax - this.#producedBytes) {
      throw tooLarge(this.#limits);
    }
    const header = input.slice(at, next);
    const windowBytes = singleSegment ? contentBytes! : this.#boundWindow(header);
    this.#frame = {
      decoder: new Decompress((chunk) => {
        if (chunk.length > 0) this.#decoded.push(chunk);
      }),
      blockBytesMax: Math.max(1, Math.min(blockBytesMax, windowBytes)),
      checksum: (descriptor & 0x04) !== 0,
      contentBytes,
      producedBytes: 0,
      header,
    };
    this.#frames++;
    this.#at = next;
  }

  /** The window the header's descriptor (byte 5) declares, declared smaller when past the bound. */
  #boundWindow(header: Uint8Array): number {
    const windowBytes = windowOf(header[5]!);
    if (windowBytes <= this.#limits.outputBytesMax) return windowBytes;
    const exponent = Math.ceil(Math.log2(this.#limits.outputBytesMax));
    header[5] = (exponent - windowLogMin) << 3;
    return 2 ** exponent;
  }

  #decodeBlock(frame: Frame, out: Uint8Array[]): number {
    const input = this.#input;
    const at = this.#at;
    if (input.length - at < 3) throw corrupt("its zstd records end inside a block header");
    const word = readUintLe(input, at, 3);
    const last = (word & 1) === 1;
    const type = (word >> 1) & 3;
    const size = word >>> 3;
    if (type === reservedBlockType) throw corrupt("a zstd block is of the reserved type");
    if (size > frame.blockBytesMax) throw corrupt(`a zstd block of ${size} bytes exceeds its frame's blocks`);
    const end = at + 3 + (type === rleBlockType ? 1 : size) + (last && frame.checksum ? 4 : 0);
    if (end > input.length) throw corrupt("a zstd block runs past the batch");
    let bytes = input.subarray(at, end);
    if (frame.header !== null) {
      bytes = joined(frame.header, bytes);
      frame.header = null;
    }
    this.#decoded.length = 0;
    frame.decoder.push(bytes, last);
    let produced = 0;
    for (const chunk of this.#decoded) {
      out.push(chunk);
      produced += chunk.length;
    }
    this.#decoded.length = 0;
    this.#producedBytes += produced;
    frame.producedBytes += produced;
    this.#at = end;
    if (last) {
      if (frame.contentBytes !== null && frame.producedBytes !== frame.contentBytes) {
        throw corrupt(`its zstd frame decodes to ${frame.producedBytes} bytes, not ${frame.contentBytes}`);
      }
      this.#frame = null;
    }
    return produced;
  }
}

/** The window a frame header's window descriptor declares: 2^(10 + exponent), plus eighths of it. */
function windowOf(descriptor: number): number {
  const base = 2 ** (windowLogMin + (descriptor >> 3));
  return base + (base / 8) * (descriptor & 7);
}

/** The frame content size field: 1, 2 (plus 256), 4 or 8 bytes, little-endian. */
function readContentSize(input: Uint8Array, at: number, bytes: number): number {
  if (bytes === 8) return readUintLe(input, at, 4) + readUintLe(input, at + 4, 4) * 2 ** 32;
  return readUintLe(input, at, bytes) + (bytes === 2 ? 256 : 0);
}

function joined(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/**
 * Kafka's zstd (compression code 4) through libzstd, where node:zlib has it (Deno, and Node from
 * 22.15): one bounded call of the native stream (`NativeZlibStream`, `gzip_steps.ts`) per step, at
 * most one piece of input and one piece of output, as `GzipSteps` does for zlib. libzstd stops anywhere, so a step is a
 * piece whatever the frame's window; its windows are refused past 128 MiB (libzstd's default
 * `windowLogMax`, 27), as corrupt. Where node:zlib has no zstd (Node 20), `ZstdSteps` (above)
 * decodes with fzstd a block at a time.
 */

type CreateZstdDecompress = () => unknown;

/** node:zlib's `createZstdDecompress`, or null where it has none. */
const createZstdDecompress: CreateZstdDecompress | null =
  typeof (zlib as unknown as { createZstdDecompress?: unknown }).createZstdDecompress === "function"
    ? (zlib as unknown as { createZstdDecompress: CreateZstdDecompress }).createZstdDecompress
    : null;

/** `ZSTD_e_continue`: decode what the input holds, no flush. */
const zstdContinue = 0;

/** Whether node:zlib decodes zstd here, natively. */
export const nativeZstd = createZstdDecompress !== null;

export class ZstdNativeSteps implements DecompressionSteps {
  readonly #input: Uint8Array;
  readonly #limits: StepLimits;
  readonly #stream: NativeZlibStream;
  #at = 0;
  #producedBytes = 0;
  #done = false;

  constructor(input: Uint8Array, limits: StepLimits) {
    assert(createZstdDecompress !== null, "node:zlib decodes zstd here");
    this.#input = input;
    this.#limits = limits;
    this.#stream = new NativeZlibStream(createZstdDecompress(), "its zstd records do not decompress");
  }

  get done(): boolean {
    return this.#done;
  }

  close(): void {
    this.#stream.close();
  }

  next(): Uint8Array[] {
    const piece = this.#limits.pieceBytes;
    const inputBytes = Math.min(piece, this.#input.length - this.#at);
    const output = new Uint8Array(piece);
    const { producedBytes, inputTakenBytes, outputLeftBytes } = this.#stream.write(
      zstdContinue,
      this.#input,
      this.#at,
      inputBytes,
      output,
    );
    this.#at += inputTakenBytes;
    this.#producedBytes += producedBytes;
    if (this.#producedBytes > this.#limits.outputBytesMax) throw tooLarge(this.#limits);
    // Room left in the output with every byte of input taken: libzstd has nothing more to give.
    // A frame cut short ends here too; its records then fail their own count (`batch_codec.ts`).
    if (outputLeftBytes > 0 && this.#at === this.#input.length) this.#done = true;
    return producedBytes > 0 ? [output.subarray(0, producedBytes)] : [];
  }
}
