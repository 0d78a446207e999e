import { constants, createGunzip } from "node:zlib";
import type { DecompressionSteps, StepLimits } from "./decompression_steps.ts";
import { NativeZlibStream } from "./native_zlib_stream.ts";

/**
 * Kafka's gzip (compression code 1), inflated by zlib one bounded call at a time: each step hands
 * zlib at most one piece of input and an output buffer of at most one piece, synchronously, through
 * the native stream's `writeSync` (`native_zlib_stream.ts`; what node:zlib's own `gunzipSync` loops over). Neither of zlib's
 * asynchronous forms would do: under Deno both run on the loop's thread, and one write of a piece of
 * compressed input inflates all of it (up to a thousand times its size) before the loop turns.
 * Concatenated gzip members are read as one stream and bytes after the last are ignored, as
 * `gunzipSync` does.
 */

/** Output buffers are at least this large: a smaller one costs more steps than it saves memory. */
const outputBytesMin = 4096;

export class GzipSteps implements DecompressionSteps {
  readonly #input: Uint8Array;
  readonly #limits: StepLimits;
  readonly #stream: NativeZlibStream;
  /** The last member's size as its trailer says (modulo 2^32): how large to make output buffers. */
  readonly #sizeHint: number;
  #at = 0;
  #producedBytes = 0;
  #done = false;

  constructor(input: Uint8Array, limits: StepLimits) {
    this.#input = input;
    this.#limits = limits;
    this.#stream = new NativeZlibStream(createGunzip(), "its gzip records do not inflate");
    const view = new DataView(input.buffer, input.byteOffset, input.byteLength);
    this.#sizeHint = input.length >= 4 ? view.getUint32(input.length - 4, true) : 0;
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
    const last = this.#at + inputBytes === this.#input.length;
    const left = this.#sizeHint - this.#producedBytes;
    // One byte more than the hint says is left: a whole stream then ends with room to spare.
    const output = new Uint8Array(left >= 0 ? Math.min(piece, Math.max(left + 1, outputBytesMin)) : piece);
    const flush = last ? constants.Z_FINISH : constants.Z_NO_FLUSH;
    const { producedBytes, inputTakenBytes, outputLeftBytes } = this.#stream.write(
      flush,
      this.#input,
      this.#at,
      inputBytes,
      output,
    );
    this.#at += inputTakenBytes;
    this.#producedBytes += producedBytes;
    // Room left in the output means zlib stopped for want of input: at the end of the input (which
    // Z_FINISH makes an error unless the stream ended), or before it only when the stream ended.
    if (outputLeftBytes > 0 && (last || inputTakenBytes < inputBytes)) this.#done = true;
    return producedBytes > 0 ? [output.subarray(0, producedBytes)] : [];
  }
}
