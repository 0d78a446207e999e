import { constants, createGunzip } from "node:zlib";
import { assert } from "../runtime/assert.ts";
import { corrupt, type DecompressionSteps, type StepLimits } from "./decompression_steps.ts";

/**
 * Kafka's gzip (compression code 1), inflated by zlib one bounded call at a time: each step hands
 * zlib at most one piece of input and an output buffer of at most one piece, synchronously, through
 * the native stream's `writeSync` (what node:zlib's own `gunzipSync` loops over). Neither of zlib's
 * asynchronous forms would do: under Deno both run on the loop's thread, and one write of a piece of
 * compressed input inflates all of it (up to a thousand times its size) before the loop turns.
 * Concatenated gzip members are read as one stream and bytes after the last are ignored, as
 * `gunzipSync` does.
 */

/** The part of node:zlib's native stream the steps use (Node's and Deno's alike). */
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
  /** Called by the native stream, synchronously within `writeSync`, when inflating fails. */
  onerror: (message: string, errno: number) => void;
}

/** node:zlib's Gunzip stream with its native handle and the handle's state: output, input left. */
interface GunzipInternals {
  _handle?: ZlibHandle;
  _writeState?: Uint32Array;
  close(): void;
}

/** Output buffers are at least this large: a smaller one costs more steps than it saves memory. */
const outputBytesMin = 4096;

export class GzipSteps implements DecompressionSteps {
  readonly #input: Uint8Array;
  readonly #limits: StepLimits;
  readonly #stream: GunzipInternals;
  readonly #handle: ZlibHandle;
  readonly #state: Uint32Array;
  /** The last member's size as its trailer says (modulo 2^32): how large to make output buffers. */
  readonly #sizeHint: number;
  #at = 0;
  #producedBytes = 0;
  #failure: string | null = null;
  #done = false;

  constructor(input: Uint8Array, limits: StepLimits) {
    this.#input = input;
    this.#limits = limits;
    const stream = createGunzip() as unknown as GunzipInternals;
    assert(
      stream._handle !== undefined && typeof stream._handle.writeSync === "function" &&
        stream._writeState instanceof Uint32Array,
      "node:zlib's Gunzip has its native handle and write state",
    );
    this.#stream = stream;
    this.#handle = stream._handle;
    this.#state = stream._writeState;
    this.#handle.onerror = (message) => {
      this.#failure = message;
    };
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
    this.#handle.writeSync(flush, this.#input, this.#at, inputBytes, output, 0, output.length);
    if (this.#failure !== null) throw corrupt(`its gzip records do not inflate: ${this.#failure}`);
    const outputLeft = this.#state[0]!;
    const inputLeft = this.#state[1]!;
    const produced = output.length - outputLeft;
    this.#at += inputBytes - inputLeft;
    this.#producedBytes += produced;
    // Room left in the output means zlib stopped for want of input: at the end of the input (which
    // Z_FINISH makes an error unless the stream ended), or before it only when the stream ended.
    if (outputLeft > 0 && (last || inputLeft > 0)) this.#done = true;
    return produced > 0 ? [output.subarray(0, produced)] : [];
  }
}
