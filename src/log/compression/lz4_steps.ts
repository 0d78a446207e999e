import {
  copyBack,
  corrupt,
  type DecompressionSteps,
  readUintLe,
  type StepLimits,
  tooLarge,
} from "./decompression_steps.ts";

/** Literal runs and matches up to this long are copied byte by byte: shorter than a native copy costs. */
const byteCopyBytesMax = 32;

/**
 * One compressed block, decoded sequence by sequence into `output` after the history its matches
 * may reach; `run` stops at any byte (within a literal run or a match), so a step ends where its
 * piece does. Every length and offset is checked against the input and the output's capacity.
 */
export class Lz4Block {
  readonly output: Uint8Array;
  readonly #input: Uint8Array;
  readonly #inputEnd: number;
  readonly #overflow: string;
  #inputAt: number;
  #outputAt: number;
  /** Literal bytes of the current sequence still to copy. */
  #literal = 0;
  /** Match bytes of the current sequence still to copy, and their distance. */
  #match = 0;
  #distance = 0;
  /** The match length nibble of a token whose literals are copied and whose offset is next; -1 none. */
  #matchNibble = -1;

  constructor(
    input: Uint8Array,
    start: number,
    end: number,
    history: Uint8Array,
    capacity: number,
    overflow: string,
  ) {
    this.#input = input;
    this.#inputAt = start;
    this.#inputEnd = end;
    this.#overflow = overflow;
    this.output = new Uint8Array(history.length + capacity);
    this.output.set(history);
    this.#outputAt = history.length;
  }

  get inputAt(): number {
    return this.#inputAt;
  }

  get outputAt(): number {
    return this.#outputAt;
  }

  get done(): boolean {
    return this.#literal === 0 && this.#match === 0 && this.#inputAt === this.#inputEnd;
  }

  /**
   * Decodes until the output reaches `end` or the block is done: first what the last step cut (a
   * literal run, a match, or a match whose offset is next), then whole sequences in a loop over
   * locals. At full capacity it still reads what follows: an empty last token ends the block,
   * anything else decodes past it.
   */
  run(end: number): void {
    while (this.#cut() && this.#outputAt < end) this.#step(end);
    if (!this.#cut()) this.#sequences(end);
    while (this.#outputAt === this.output.length && !this.done) this.#step(end);
  }

  #cut(): boolean {
    return this.#literal > 0 || this.#match > 0 || this.#matchNibble >= 0;
  }

  /** One move of the decoder, a part of a sequence at most. */
  #step(end: number): void {
    if (this.#literal > 0) this.#copyLiterals(Math.min(this.#literal, end - this.#outputAt));
    else if (this.#match > 0) {
      const n = Math.min(this.#match, end - this.#outputAt);
      copyBack(this.output, this.#outputAt, this.#distance, n);
      this.#outputAt += n;
      this.#match -= n;
    } else if (this.#inputAt === this.#inputEnd) this.#matchNibble = -1;
    else if (this.#matchNibble >= 0) this.#readMatch();
    else this.#readToken();
  }

  /**
   * Whole sequences up to `end`, over locals (the hot loop: the same checks as `#readToken` and
   * `#readMatch`); the sequence `end` cuts is left for `#step` to finish.
   */
  #sequences(end: number): void {
    const input = this.#input;
    const output = this.output;
    const inputEnd = this.#inputEnd;
    const capacity = output.length;
    let inAt = this.#inputAt;
    let outAt = this.#outputAt;
    // Each pass reads at least a token: the block's end bounds the loop.
    while (outAt < end && inAt < inputEnd) {
      const token = input[inAt++]!;
      let literal = token >> 4;
      if (literal === 15) {
        for (let byte = 255; byte === 255;) {
          if (inAt === inputEnd) throw corrupt("an lz4 length runs past its block");
          byte = input[inAt++]!;
          literal += byte;
          if (literal > capacity) throw corrupt(this.#overflow);
        }
      }
      if (literal > inputEnd - inAt) throw corrupt("lz4 literals run past their block");
      if (literal > capacity - outAt) throw corrupt(this.#overflow);
      const n = Math.min(literal, end - outAt);
      if (n <= byteCopyBytesMax) { for (let i = 0; i < n; i++) output[outAt + i] = input[inAt + i]!; }
      else output.set(input.subarray(inAt, inAt + n), outAt);
      inAt += n;
      outAt += n;
      if (n < literal || inAt === inputEnd) {
        // Cut within its literals (the match's nibble waits), or the block's last, literals only.
        this.#literal = literal - n;
        this.#matchNibble = n < literal ? token & 15 : -1;
        break;
      }
      if (inputEnd - inAt < 2) throw corrupt("an lz4 match offset runs past its block");
      const distance = input[inAt]! | (input[inAt + 1]! << 8);
      inAt += 2;
      if (distance === 0 || distance > outAt) throw corrupt("an lz4 match reaches before its data");
      let length = token & 15;
      if (length === 15) {
        for (let byte = 255; byte === 255;) {
          if (inAt === inputEnd) throw corrupt("an lz4 length runs past its block");
          byte = input[inAt++]!;
          length += byte;
          if (length > capacity) throw corrupt(this.#overflow);
        }
      }
      length += 4;
      if (length > capacity - outAt) throw corrupt(this.#overflow);
      const m = Math.min(length, end - outAt);
      if (m <= byteCopyBytesMax) {
        for (let i = 0; i < m; i++) output[outAt + i] = output[outAt - distance + i]!;
      } else copyBack(output, outAt, distance, m);
      outAt += m;
      this.#match = length - m;
      this.#distance = distance;
    }
    this.#inputAt = inAt;
    this.#outputAt = outAt;
  }

  #copyLiterals(n: number): void {
    const input = this.#input;
    const output = this.output;
    if (n <= byteCopyBytesMax) {
      for (let i = 0; i < n; i++) output[this.#outputAt + i] = input[this.#inputAt + i]!;
    } else {
      output.set(input.subarray(this.#inputAt, this.#inputAt + n), this.#outputAt);
    }
    this.#inputAt += n;
    this.#outputAt += n;
    this.#literal -= n;
  }

  #readToken(): void {
    const token = this.#input[this.#inputAt++]!;
    const literal = token >> 4 === 15 ? this.#extendedLength(15) : token >> 4;
    if (literal > this.#inputEnd - this.#inputAt) throw corrupt("lz4 literals run past their block");
    if (literal > this.output.length - this.#outputAt) throw corrupt(this.#overflow);
    this.#literal = literal;
    this.#matchNibble = token & 15;
  }

  #readMatch(): void {
    if (this.#inputEnd - this.#inputAt < 2) throw corrupt("an lz4 match offset runs past its block");
    const distance = this.#input[this.#inputAt]! | (this.#input[this.#inputAt + 1]! << 8);
    this.#inputAt += 2;
    if (distance === 0 || distance > this.#outputAt) throw corrupt("an lz4 match reaches before its data");
    const nibble = this.#matchNibble;
    this.#matchNibble = -1;
    const length = (nibble === 15 ? this.#extendedLength(15) : nibble) + 4;
    if (length > this.output.length - this.#outputAt) throw corrupt(this.#overflow);
    this.#match = length;
    this.#distance = distance;
  }

  /** A length of 15 goes on in bytes that add up while they are 255. */
  #extendedLength(base: number): number {
    let length = base;
    // Each pass reads one input byte: the block's end bounds the loop, and so does the capacity.
    for (;;) {
      if (this.#inputAt === this.#inputEnd) throw corrupt("an lz4 length runs past its block");
      const byte = this.#input[this.#inputAt++]!;
      length += byte;
      if (byte !== 255) return length;
      if (length > this.output.length) throw corrupt(this.#overflow);
    }
  }
}

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
