import {
  corrupt,
  type DecompressionSteps,
  readUintLe,
  type StepLimits,
  tooLarge,
} from "./decompression_steps.ts";
import { Lz4Block } from "./lz4_block.ts";

/**
 * Kafka's lz4 (compression code 3): the LZ4 frame format, one or more frames, each a header and
 * blocks of at most 64 KiB to 4 MiB (the header says which), decoded here block by block and within
 * a block sequence by sequence, so that a step stops after one piece of output wherever it falls.
 * Blocks may be linked (matches reach up to 64 KiB back into the blocks before). Checksums (the
 * header's, the blocks', the content's) are skipped: the batch's CRC32C covers all these bytes.
 */

const frameMagic = 0x184d2204;
/** Skippable frames carry any magic of 0x184D2A50 to 0x184D2A5F, then their length. */
const skippableMagic = 0x184d2a50;
const skippableMagicMask = 0xfffffff0;
/** A block's largest size, by the frame descriptor's block maximum id. */
const blockBytesMaxById: Readonly<Record<number, number>> = {
  4: 64 * 1024,
  5: 256 * 1024,
  6: 1024 * 1024,
  7: 4 * 1024 * 1024,
};
/** How far back a linked block's matches reach, at most. */
const historyBytes = 64 * 1024;
/** The high bit of a block's size word: the block is stored uncompressed. */
const uncompressedFlag = 0x80000000;
/** Output bytes one input byte of a compressed block may give at most (a match length byte of 255). */
const expansionMax = 255;

interface Frame {
  blockBytesMax: number;
  linked: boolean;
  blockChecksum: boolean;
  contentChecksum: boolean;
  /** The content size the header declares, or null. */
  contentBytes: number | null;
  producedBytes: number;
}

const noHistory = new Uint8Array(0);

export class Lz4Steps implements DecompressionSteps {
  readonly #input: Uint8Array;
  readonly #limits: StepLimits;
  /** Where the next frame or block header starts. */
  #at = 0;
  #frame: Frame | null = null;
  #block: Lz4Block | null = null;
  /** An uncompressed block still being handed out: its input from `at` to `end`. */
  #raw: { start: number; at: number; end: number } | null = null;
  /** Where the input goes on once the current block is done (past its checksum). */
  #afterBlock = 0;
  /** The last 64 KiB (at most) of the frame's output, which a linked block's matches may reach. */
  #history: Uint8Array = noHistory;
  #producedBytes = 0;
  #frames = 0;
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
    const startedAt = this.#position();
    let produced = 0;
    // Every pass produces output, reads a header or finishes: the input's length bounds the loop.
    while (!this.#done && produced < piece && this.#position() - startedAt < piece) {
      if (this.#block !== null) produced += this.#runBlock(out, piece - produced);
      else if (this.#raw !== null) produced += this.#emitRaw(out, piece - produced);
      else if (this.#frame !== null) this.#readBlockHeader(this.#frame);
      else if (this.#at < this.#input.length) this.#readFrameHeader();
      else if (this.#frames === 0) throw corrupt("its lz4 records hold no frame");
      else this.#done = true;
    }
    return out;
  }

  #position(): number {
    return this.#block?.inputAt ?? this.#raw?.at ?? this.#at;
  }

  #remainingBytes(): number {
    return this.#limits.outputBytesMax - this.#producedBytes;
  }

  #readFrameHeader(): void {
    const input = this.#input;
    const at = this.#at;
    if (input.length - at < 8) throw corrupt("its lz4 records end inside a frame header");
    const magic = readUintLe(input, at, 4);
    if ((magic & skippableMagicMask) === skippableMagic) {
      const end = at + 8 + readUintLe(input, at + 4, 4);
      if (end > input.length) throw corrupt("a skippable lz4 frame runs past the batch");
      this.#at = end;
      return;
    }
    if (magic !== frameMagic) {
      throw corrupt(`its lz4 frame starts with 0x${magic.toString(16)}, no LZ4 magic`);
    }
    const flags = input[at + 4]!;
    const blockBytesMax = blockBytesMaxById[(input[at + 5]! >> 4) & 7];
    if (flags >> 6 !== 1) throw corrupt(`its lz4 frame is of version ${flags >> 6}, not 1`);
    if ((flags & 0x01) !== 0) throw corrupt("its lz4 frame needs a dictionary");
    if (blockBytesMax === undefined) throw corrupt("its lz4 frame names no block size LZ4 defines");
    let next = at + 6;
    let contentBytes: number | null = null;
    if ((flags & 0x08) !== 0) {
      if (input.length - next < 8) throw corrupt("its lz4 records end inside a frame header");
      contentBytes = readUintLe(input, next, 4) + readUintLe(input, next + 4, 4) * 2 ** 32;
      if (contentBytes > this.#remainingBytes()) throw tooLarge(this.#limits);
      next += 8;
    }
    // The header checksum is skipped (the batch's CRC32C covers it).
    this.#at = next + 1;
    this.#frames++;
    this.#history = noHistory;
    this.#frame = {
      blockBytesMax,
      linked: (flags & 0x20) === 0,
      blockChecksum: (flags & 0x10) !== 0,
      contentChecksum: (flags & 0x04) !== 0,
      contentBytes,
      producedBytes: 0,
    };
  }

  #readBlockHeader(frame: Frame): void {
    const input = this.#input;
    const at = this.#at;
    if (input.length - at < 4) throw corrupt("its lz4 records end inside a block header");
    const word = readUintLe(input, at, 4);
    if (word === 0) {
      this.#at = at + 4 + (frame.contentChecksum ? 4 : 0);
      if (this.#at > input.length) throw corrupt("its lz4 records end inside a content checksum");
      if (frame.contentBytes !== null && frame.producedBytes !== frame.contentBytes) {
        throw corrupt(`its lz4 frame decodes to ${frame.producedBytes} bytes, not ${frame.contentBytes}`);
      }
      this.#frame = null;
      return;
    }
    const size = word >= uncompressedFlag ? word - uncompressedFlag : word;
    const start = at + 4;
    this.#afterBlock = start + size + (frame.blockChecksum ? 4 : 0);
    if (size > frame.blockBytesMax) throw corrupt(`an lz4 block of ${size} bytes exceeds its frame's blocks`);
    if (this.#afterBlock > input.length) throw corrupt("an lz4 block runs past the batch");
    if (word >= uncompressedFlag) {
      if (size > this.#remainingBytes()) throw tooLarge(this.#limits);
      this.#raw = { start, at: start, end: start + size };
      return;
    }
    const bound = Math.min(frame.blockBytesMax, size * expansionMax);
    const capacity = Math.min(bound, this.#remainingBytes());
    const overflow = capacity < bound
      ? tooLarge(this.#limits).message
      : `an lz4 block decodes past its frame's ${frame.blockBytesMax}-byte blocks`;
    const history = frame.linked ? this.#history : noHistory;
    this.#block = new Lz4Block(input, start, start + size, history, capacity, overflow);
  }

  #runBlock(out: Uint8Array[], budget: number): number {
    const block = this.#block!;
    const from = block.outputAt;
    block.run(Math.min(block.output.length, from + budget));
    const produced = block.outputAt - from;
    if (produced > 0) out.push(block.output.subarray(from, block.outputAt));
    this.#account(produced);
    if (block.done) {
      this.#history = block.output.subarray(Math.max(0, block.outputAt - historyBytes), block.outputAt);
      this.#block = null;
      this.#at = this.#afterBlock;
    }
    return produced;
  }

  #emitRaw(out: Uint8Array[], budget: number): number {
    const raw = this.#raw!;
    const n = Math.min(budget, raw.end - raw.at);
    out.push(this.#input.subarray(raw.at, raw.at + n));
    raw.at += n;
    this.#account(n);
    if (raw.at === raw.end) {
      this.#history = withHistory(this.#history, this.#input.subarray(raw.start, raw.end));
      this.#raw = null;
      this.#at = this.#afterBlock;
    }
    return n;
  }

  #account(bytes: number): void {
    this.#producedBytes += bytes;
    this.#frame!.producedBytes += bytes;
  }
}

/** The last 64 KiB of `history` followed by `more` (the tail of an uncompressed block). */
function withHistory(history: Uint8Array, more: Uint8Array): Uint8Array {
  if (more.length >= historyBytes) return more.subarray(more.length - historyBytes);
  const kept = history.subarray(Math.max(0, history.length - (historyBytes - more.length)));
  const joined = new Uint8Array(kept.length + more.length);
  joined.set(kept);
  joined.set(more, kept.length);
  return joined;
}
