import { assert } from "../../runtime/assert.ts";
import { type DecompressionSteps, type StepLimits, tooLarge } from "./decompression_steps.ts";
import { GzipSteps } from "./gzip_steps.ts";
import { Lz4Steps } from "./lz4_steps.ts";
import { RecordBatchError } from "../batch/record_batch.ts";
import { snappySteps } from "./snappy_steps.ts";
import { nativeZstd, ZstdNativeSteps, ZstdSteps } from "./zstd_steps.ts";

/**
 * The records of a compressed batch, decompressed, for the one reader that must open them: the HTTP
 * API's reads (a Kafka fetch serves the batch as stored). Codes as Kafka's attributes have them:
 * 1 gzip, 2 snappy (raw, or in the xerial framing Java clients write), 3 lz4 (the LZ4 frame
 * format), 4 zstd. The work is cut into steps of at most one piece of output and of input, with a
 * pause (a yield to the event loop) between two steps, and what the records may grow to is bounded
 * (docs/FORMAT.md, "Compressed batches").
 */

/** Bytes a batch's records may decompress to at most; more is refused as corrupt. */
export const decompressedRecordsBytesMax = 64 * 1024 * 1024;

/** Output bytes (and input bytes, about) one synchronous step of decompression handles at most. */
export const decompressionPieceBytes = 1024 * 1024;

/**
 * Output bytes one step of each codec produces at most, by compression code: the whole piece for
 * zlib's native inflate, less for the decoders written in JavaScript (snappy and lz4 here, zstd in
 * fzstd, which also shifts its window after each block), so that a step of any codec takes about
 * as long: a millisecond or so (docs/FORMAT.md, "Compressed batches"). A zstd step is one block.
 */
export const stepOutputBytesMaxByCode: Readonly<Record<number, number>> = {
  1: decompressionPieceBytes,
  2: 256 * 1024,
  3: 256 * 1024,
  // libzstd (Deno's node:zlib) stops anywhere, as zlib does, but takes 2 to 4 ms a MiB of records;
  // fzstd (Node 20) stops only between blocks.
  4: nativeZstd ? 256 * 1024 : 128 * 1024,
};

/** Waits between two steps: a yield to the event loop (`yieldToReactor`), or a test's counter. */
export type Pause = () => Promise<void>;

const defaultLimits: StepLimits = {
  pieceBytes: decompressionPieceBytes,
  outputBytesMax: decompressedRecordsBytesMax,
};

/**
 * The steps of one batch's records, each within `limits.pieceBytes` and the codec's own step
 * (`stepOutputBytesMaxByCode`); an unknown compression code is corrupt.
 */
export function decompressionSteps(
  code: number,
  compressed: Uint8Array,
  limits: StepLimits = defaultLimits,
): DecompressionSteps {
  const stepBytes = stepOutputBytesMaxByCode[code];
  const codecLimits = { ...limits, pieceBytes: Math.min(limits.pieceBytes, stepBytes ?? limits.pieceBytes) };
  switch (code) {
    case 1:
      return new GzipSteps(compressed, codecLimits);
    case 2:
      return snappySteps(compressed, codecLimits);
    case 3:
      return new Lz4Steps(compressed, codecLimits);
    case 4:
      return nativeZstd
        ? new ZstdNativeSteps(compressed, codecLimits)
        : new ZstdSteps(compressed, codecLimits);
    default:
      throw new RecordBatchError("corrupt", `compression code ${code} is not one Kafka defines`);
  }
}

/**
 * Decompresses a batch's records step by step, awaiting `pause` between two steps and between two
 * pieces of the copy that joins the steps' output. Throws RecordBatchError "corrupt" when the
 * records do not decompress or decompress past `limits.outputBytesMax`.
 */
export async function decompressRecords(
  code: number,
  compressed: Uint8Array,
  pause: Pause,
  limits: StepLimits = defaultLimits,
): Promise<Uint8Array> {
  const output = new StepOutput(code, limits);
  const steps = output.open(compressed);
  try {
    output.take(steps);
    while (!steps.done) {
      await pause();
      output.take(steps);
    }
  } finally {
    steps.close();
  }
  return await output.join(pause);
}

/** The same, in one synchronous run: for tests and tools, never the server's reads. */
export function decompressRecordsWhole(
  code: number,
  compressed: Uint8Array,
  limits: StepLimits = defaultLimits,
): Uint8Array {
  const output = new StepOutput(code, limits);
  const steps = output.open(compressed);
  try {
    output.take(steps);
    while (!steps.done) output.take(steps);
  } finally {
    steps.close();
  }
  return output.joinWhole();
}

/** What the steps produced so far, bounded, and its joining into one buffer. */
class StepOutput {
  readonly #code: number;
  readonly #limits: StepLimits;
  readonly #chunks: Uint8Array[] = [];
  #bytes = 0;

  constructor(code: number, limits: StepLimits) {
    this.#code = code;
    this.#limits = limits;
  }

  open(compressed: Uint8Array): DecompressionSteps {
    return this.#refusing(() => decompressionSteps(this.#code, compressed, this.#limits));
  }

  /** Runs one step and keeps its output; past the bound, corrupt. */
  take(steps: DecompressionSteps): void {
    const chunks = this.#refusing(() => steps.next());
    for (const chunk of chunks) {
      this.#bytes += chunk.length;
      if (this.#bytes > this.#limits.outputBytesMax) throw tooLarge(this.#limits);
      this.#chunks.push(chunk);
    }
  }

  /** Runs `work`, turning a codec's own failure into a refusal of the batch as corrupt. */
  #refusing<T>(work: () => T): T {
    try {
      return work();
    } catch (error) {
      if (error instanceof RecordBatchError) throw error;
      throw new RecordBatchError("corrupt", `its ${codecName(this.#code)} records do not decompress`, {
        cause: error,
      });
    }
  }

  /** One buffer of all the output: a view when the steps wrote one buffer in order, else a copy. */
  async join(pause: Pause): Promise<Uint8Array> {
    const whole = this.#contiguous();
    if (whole !== null) return whole;
    const out = new Uint8Array(this.#bytes);
    const piece = this.#limits.pieceBytes;
    let at = 0;
    let copied = 0;
    for (const chunk of this.#chunks) {
      for (let from = 0; from < chunk.length;) {
        if (copied === piece) {
          await pause();
          copied = 0;
        }
        const n = Math.min(chunk.length - from, piece - copied);
        out.set(chunk.subarray(from, from + n), at);
        from += n;
        at += n;
        copied += n;
      }
    }
    assert(at === out.length, "the joined output holds every step's bytes");
    return out;
  }

  joinWhole(): Uint8Array {
    const whole = this.#contiguous();
    if (whole !== null) return whole;
    const out = new Uint8Array(this.#bytes);
    let at = 0;
    for (const chunk of this.#chunks) {
      out.set(chunk, at);
      at += chunk.length;
    }
    return out;
  }

  /** The output as one view when every chunk follows the one before in the same buffer; else null. */
  #contiguous(): Uint8Array | null {
    const first = this.#chunks[0];
    if (first === undefined) return new Uint8Array(0);
    let end = first.byteOffset + first.length;
    for (const chunk of this.#chunks.slice(1)) {
      if (chunk.buffer !== first.buffer || chunk.byteOffset !== end) return null;
      end += chunk.length;
    }
    return new Uint8Array(first.buffer, first.byteOffset, this.#bytes);
  }
}

function codecName(code: number): string {
  return ["none", "gzip", "snappy", "lz4", "zstd"][code] ?? `code ${code}`;
}
