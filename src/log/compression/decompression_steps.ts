import { RecordBatchError } from "../batch/record_batch.ts";

/**
 * One codec's decompression of a batch's records, cut into steps: each call of `next` runs
 * synchronously and does at most one piece of work, and the caller yields between two calls
 * (`batch_compression.ts`). The codecs are in `gzip_steps.ts`, `snappy_steps.ts`, `lz4_steps.ts`
 * and `zstd_steps.ts`; how far each can be cut is in docs/FORMAT.md, "Compressed batches".
 */
export interface DecompressionSteps {
  /** Runs one step and returns the output it produced, in order (possibly none). */
  next(): Uint8Array[];
  /** True once the whole input is decoded; `next` is not called again. */
  readonly done: boolean;
  /** Gives back what the decoder holds (zlib's native stream); safe to call twice, done or not. */
  close(): void;
}

/** The bounds a codec's steps keep. */
export interface StepLimits {
  /** Output bytes one step produces at most, and input bytes it reads at most (about). */
  pieceBytes: number;
  /** Output bytes the whole input may decode to; a codec refuses more as corrupt. */
  outputBytesMax: number;
}

/** A refusal of the records as corrupt, for a reason the codec names. */
export function corrupt(reason: string): RecordBatchError {
  return new RecordBatchError("corrupt", reason);
}

/** The refusal of output past `limits.outputBytesMax`. */
export function tooLarge(limits: StepLimits): RecordBatchError {
  return corrupt(`its records decompress past ${limits.outputBytesMax} bytes`);
}

/** Copies of at most this many bytes go byte by byte: shorter than a `copyWithin` call costs. */
const byteCopyBytesMax = 32;

/**
 * LZ77's copy: `length` bytes from `distance` back, written at `at` of `out`. A distance shorter
 * than the length repeats the bytes; the copy then doubles what it takes each pass, so a long run
 * of one byte costs a few native copies, not a loop per byte. The caller checks the bounds.
 */
export function copyBack(out: Uint8Array, at: number, distance: number, length: number): void {
  if (length <= byteCopyBytesMax) {
    for (let i = 0; i < length; i++) out[at + i] = out[at + i - distance]!;
    return;
  }
  const from = at - distance;
  // After each pass the bytes from `from` to the write position repeat with period `distance`, and
  // their span, a multiple of it, at least doubles: the next pass may take all of them.
  for (let copied = 0; copied < length;) {
    const n = Math.min(length - copied, at + copied - from);
    out.copyWithin(at + copied, from, from + n);
    copied += n;
  }
}

/** A little-endian unsigned integer of `bytes` bytes (at most 4) at `at`; the caller checks the bounds. */
export function readUintLe(input: Uint8Array, at: number, bytes: number): number {
  let value = 0;
  for (let i = bytes - 1; i >= 0; i--) value = value * 256 + input[at + i]!;
  return value;
}
