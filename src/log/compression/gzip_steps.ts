import { assert } from "../../runtime/assert.ts";
import { corrupt, type DecompressionSteps, type StepLimits } from "./decompression_steps.ts";
import { constants, createGunzip } from "node:zlib";

/**
 * One node:zlib native stream (gzip's inflate, zstd's decompress) driven one bounded synchronous
 * call at a time, through the undocumented `_handle.writeSync` that node:zlib's own `*Sync`
 * functions loop over (Node's and Deno's alike). The decoders that need it are `GzipSteps` (below)
 * and `ZstdNativeSteps` (`zstd_steps.ts`).
 */

/** The part of node:zlib's native stream the steps use. */
interface ZlibHandle {
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

/** A node:zlib stream's native handle and the handle's state: output, then input, left. */
interface StreamInternals {
  _handle?: ZlibHandle;
  _writeState?: Uint32Array;
  close(): void;
}

/** What one call did: output bytes written, input bytes taken, room left in the output. */
export interface NativeWrite {
  producedBytes: number;
  inputTakenBytes: number;
  outputLeftBytes: number;
}

export class NativeZlibStream {
  readonly #stream: StreamInternals;
  readonly #handle: ZlibHandle;
  readonly #state: Uint32Array;
  /** Names the records in a refusal: "its gzip records do not inflate". */
  readonly #refusal: string;
  #failure: string | null = null;

  /** Over `stream`, a node:zlib stream just made (`createGunzip()`, `createZstdDecompress()`). */
  constructor(stream: unknown, refusal: string) {
    const internals = stream as StreamInternals;
    assert(
      internals._handle !== undefined && typeof internals._handle.writeSync === "function" &&
        internals._writeState instanceof Uint32Array,
      "node:zlib's stream has its native handle and write state",
    );
    this.#stream = internals;
    this.#handle = internals._handle;
    this.#state = internals._writeState;
    this.#refusal = refusal;
    this.#handle.onerror = (message) => {
      this.#failure = message;
    };
  }

  /**
   * One call: `inputBytes` of `input` from `at` into `output`. A failure (Node's stream reports it
   * through `onerror`, Deno's zstd throws) is the records refused as corrupt.
   */
  write(flush: number, input: Uint8Array, at: number, inputBytes: number, output: Uint8Array): NativeWrite {
    try {
      this.#handle.writeSync(flush, input, at, inputBytes, output, 0, output.length);
    } catch (error) {
      this.#failure = error instanceof Error ? error.message : String(error);
    }
    if (this.#failure !== null) throw corrupt(`${this.#refusal}: ${this.#failure}`);
    const outputLeftBytes = this.#state[0]!;
    const inputLeftBytes = this.#state[1]!;
    return {
      producedBytes: output.length - outputLeftBytes,
      inputTakenBytes: inputBytes - inputLeftBytes,
      outputLeftBytes,
    };
  }

  close(): void {
    this.#stream.close();
  }
}

/**
 * Kafka's gzip (compression code 1), inflated by zlib one bounded call at a time: each step hands
 * zlib at most one piece of input and an output buffer of at most one piece, synchronously, through
 * the native stream's `writeSync` (`NativeZlibStream`, above; what node:zlib's own `gunzipSync` loops
 * over). Neither of zlib's asynchronous forms would do: under Deno both run on the loop's thread, and one write of a piece of
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
