import * as zlib from "node:zlib";
import { assert } from "../runtime/assert.ts";
import { corrupt, type DecompressionSteps, type StepLimits, tooLarge } from "./decompression_steps.ts";

/**
 * Kafka's zstd (compression code 4) through libzstd, where node:zlib has it (Deno, and Node from
 * 22.15): one bounded call of the native stream's `writeSync` per step, at most one piece of input
 * and one piece of output, as `gzip_steps.ts` does for zlib. libzstd stops anywhere, so a step is a
 * piece whatever the frame's window; its windows are refused past 128 MiB (libzstd's default
 * `windowLogMax`, 27), as corrupt. Where node:zlib has no zstd (Node 20), `zstd_steps.ts` decodes
 * with fzstd a block at a time.
 */

/** The part of node:zlib's native stream the steps use. */
interface ZstdHandle {
  writeSync(
    flush: number,
    input: Uint8Array,
    inputOffset: number,
    inputLength: number,
    output: Uint8Array,
    outputOffset: number,
    outputLength: number,
  ): void;
  /** Called by the native stream, synchronously within `writeSync`, when decoding fails. */
  onerror: (message: string, errno: number) => void;
}

interface ZstdStreamInternals {
  _handle?: ZstdHandle;
  _writeState?: Uint32Array;
  close(): void;
}

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
  readonly #stream: ZstdStreamInternals;
  readonly #handle: ZstdHandle;
  readonly #state: Uint32Array;
  #at = 0;
  #producedBytes = 0;
  #failure: string | null = null;
  #done = false;

  constructor(input: Uint8Array, limits: StepLimits) {
    assert(createZstdDecompress !== null, "node:zlib decodes zstd here");
    this.#input = input;
    this.#limits = limits;
    const stream = createZstdDecompress() as ZstdStreamInternals;
    assert(
      stream._handle !== undefined && typeof stream._handle.writeSync === "function" &&
        stream._writeState instanceof Uint32Array,
      "node:zlib's ZstdDecompress has its native handle and write state",
    );
    this.#stream = stream;
    this.#handle = stream._handle;
    this.#state = stream._writeState;
    this.#handle.onerror = (message) => {
      this.#failure = message;
    };
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
    try {
      this.#handle.writeSync(zstdContinue, this.#input, this.#at, inputBytes, output, 0, output.length);
    } catch (error) {
      // Deno's stream throws where Node's calls `onerror`.
      this.#failure = error instanceof Error ? error.message : String(error);
    }
    if (this.#failure !== null) throw corrupt(`its zstd records do not decompress: ${this.#failure}`);
    const outputLeft = this.#state[0]!;
    const inputLeft = this.#state[1]!;
    const produced = output.length - outputLeft;
    this.#at += inputBytes - inputLeft;
    this.#producedBytes += produced;
    if (this.#producedBytes > this.#limits.outputBytesMax) throw tooLarge(this.#limits);
    // Room left in the output with every byte of input taken: libzstd has nothing more to give.
    // A frame cut short ends here too; its records then fail their own count (`batch_codec.ts`).
    if (outputLeft > 0 && this.#at === this.#input.length) this.#done = true;
    return produced > 0 ? [output.subarray(0, produced)] : [];
  }
}
