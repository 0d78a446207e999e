import * as zlib from "node:zlib";
import { assert } from "../runtime/assert.ts";
import { type DecompressionSteps, type StepLimits, tooLarge } from "./decompression_steps.ts";
import { NativeZlibStream } from "./native_zlib_stream.ts";

/**
 * Kafka's zstd (compression code 4) through libzstd, where node:zlib has it (Deno, and Node from
 * 22.15): one bounded call of the native stream (`native_zlib_stream.ts`) per step, at most one piece of input
 * and one piece of output, as `gzip_steps.ts` does for zlib. libzstd stops anywhere, so a step is a
 * piece whatever the frame's window; its windows are refused past 128 MiB (libzstd's default
 * `windowLogMax`, 27), as corrupt. Where node:zlib has no zstd (Node 20), `zstd_steps.ts` decodes
 * with fzstd a block at a time.
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
