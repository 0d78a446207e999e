import { copyBack, corrupt } from "./decompression_steps.ts";

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
