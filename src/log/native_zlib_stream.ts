import { assert } from "../runtime/assert.ts";
import { corrupt } from "./decompression_steps.ts";

/**
 * One node:zlib native stream (gzip's inflate, zstd's decompress) driven one bounded synchronous
 * call at a time, through the undocumented `_handle.writeSync` that node:zlib's own `*Sync`
 * functions loop over (Node's and Deno's alike). The decoders that need it are `gzip_steps.ts` and
 * `zstd_native_steps.ts`.
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
