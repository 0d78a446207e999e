import { assert } from "../runtime/assert.ts";
import { concatBytes } from "../runtime/bytes.ts";
import type { BufferPool } from "../runtime/buffer_pool.ts";
import { ApiError, badRequest } from "./api_errors.ts";

/**
 * Request bodies up to this size are read into a pooled buffer when the runtime streams them as
 * bytes (`Deno.serve` does): a produce then costs no `ArrayBuffer` of its own. Each dead body
 * otherwise waits for V8 to collect it, and at 5 MB/s of produce they added 60 to 90 MB to the
 * server's RSS in the pump benchmark (docs/TUNING.md, item 26).
 */
export const requestBodyBufferBytes = 1024 * 1024;
/** Bound on pooled body buffers out at once; a body arriving beyond it gets a buffer of its own. */
export const requestBodyBuffersMax = 8;

/** A request's bytes, and how to give back the buffer under them once nothing reads them. */
export interface RequestBody {
  readonly bytes: Uint8Array;
  /** Gives the buffer back to its pool; a no-op for a body with a buffer of its own. */
  release(): void;
}

const ownBuffer = (bytes: Uint8Array): RequestBody => ({ bytes, release: () => {} });

/**
 * Reads the whole body, refusing with 413 as soon as it exceeds `maxBytes`. With `pool`, a body
 * whose declared length fits a pooled buffer is read into one, and the caller must `release` it
 * once nothing refers to the bytes or to views of them (decoded payloads are such views).
 */
export async function readBody(
  request: Request,
  maxBytes: number,
  pool: BufferPool | null = null,
): Promise<RequestBody> {
  const tooLarge = () =>
    new ApiError(
      413,
      "payload_too_large",
      `Cannot accept request: the body exceeds max_request_bytes (${maxBytes} bytes)`,
    );
  const declared = Number(request.headers.get("content-length") ?? NaN);
  if (declared > maxBytes) throw tooLarge();
  if (request.body === null) return ownBuffer(new Uint8Array(0));
  if (pool !== null && Number.isInteger(declared) && declared < pool.bufferBytes) {
    const pooled = await readPooled(request.body, declared, pool);
    if (pooled !== null) return pooled;
  }
  // A declared length within the limit is read in one call; the runtime holds the body to it.
  if (Number.isInteger(declared)) {
    const body = new Uint8Array(await request.arrayBuffer());
    if (body.length > maxBytes) throw tooLarge();
    return ownBuffer(body);
  }
  const pieces: Uint8Array[] = [];
  let total = 0;
  for await (const piece of request.body) {
    total += piece.length;
    if (total > maxBytes) throw tooLarge();
    pieces.push(piece);
  }
  return ownBuffer(concatBytes(pieces, total));
}

/**
 * Reads a byte stream of `declared` bytes into a buffer of the pool, with a BYOB reader so that the
 * runtime writes straight into it. Null when the stream is not one of bytes or the pool has none to
 * lend; nothing has been read then.
 */
async function readPooled(
  body: ReadableStream<Uint8Array>,
  declared: number,
  pool: BufferPool,
): Promise<RequestBody | null> {
  const lent = pool.takeBounded(pool.bufferBytes);
  if (lent === null) return null;
  const reader = byobReader(body);
  if (reader === null) {
    pool.give(lent);
    return null;
  }
  // Each read detaches the buffer it is given and answers with a new one over the same memory.
  let buffer: ArrayBuffer = lent.buffer as ArrayBuffer;
  let total = 0;
  let ended = false;
  try {
    // Every read but the last gives at least a byte, and a byte past `declared` ends the loop.
    for (let reads = 0; !ended && reads <= declared + 1; reads++) {
      // One byte more than declared, so that a body longer than its content-length is refused, not cut.
      const { value, done } = await reader.read(new Uint8Array(buffer, total, declared + 1 - total));
      if (value === undefined) throw new Error("Cannot read the request body: its stream kept the buffer");
      buffer = value.buffer as ArrayBuffer;
      ended = done;
      total += value.byteLength;
      if (total > declared) {
        throw badRequest(
          "malformed_body",
          `Cannot accept request: the body is longer than its content-length (${declared} bytes)`,
        );
      }
    }
  } catch (error) {
    release(pool, lent.buffer as ArrayBuffer, buffer);
    throw error;
  }
  assert(ended, "Cannot read the request body: its stream neither ended nor overflowed");
  const bytes = new Uint8Array(buffer, 0, total);
  let released = false;
  return {
    bytes,
    release: () => {
      if (released) return;
      released = true;
      release(pool, lent.buffer as ArrayBuffer, buffer);
    },
  };
}

function release(pool: BufferPool, lent: ArrayBuffer, current: ArrayBuffer): void {
  // A read that failed kept the buffer it was given: only a buffer still whole can go back.
  if (current.byteLength === pool.bufferBytes) pool.giveMoved(lent, current);
  else pool.forget(lent);
}

function byobReader(body: ReadableStream<Uint8Array>): ReadableStreamBYOBReader | null {
  try {
    return body.getReader({ mode: "byob" });
  } catch (error) {
    // Only a byte stream has a BYOB reader; any other is read the ordinary way.
    if (error instanceof TypeError) return null;
    throw error;
  }
}
