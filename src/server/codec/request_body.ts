import { assert } from "../../runtime/assert.ts";
import { type BufferPool, concatBytes } from "../../runtime/memory/buffers.ts";
import { ApiError, badRequest } from "../api_errors.ts";

/**
 * Produce bodies with a declared length under this size are read into a pooled buffer rather than
 * a new one per request. Each dead body otherwise waits for V8 to collect it, and at 5 MB/s of
 * produce they added tens of megabytes to the server's RSS in the pump benchmark (docs/TUNING.md,
 * "Buffer pools").
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
  if (pool !== null && Number.isInteger(declared) && declared >= 0 && declared < pool.bufferBytes) {
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
 * Reads a body of `declared` bytes into a buffer of the pool. Null when the pool has none to lend;
 * nothing has been read then. `Deno.serve` streams the first request of a connection as bytes,
 * which a BYOB reader lets it write straight into the buffer; later requests on a kept-alive
 * connection come as 64 KiB pieces of their own, copied in (the pieces are still garbage, but not
 * the whole body gathered once more).
 */
async function readPooled(
  body: ReadableStream<Uint8Array>,
  declared: number,
  pool: BufferPool,
): Promise<RequestBody | null> {
  const byob = byobReader(body);
  const lent = pool.takeBounded(pool.bufferBytes);
  if (lent === null) {
    // Nothing was read: the stream, unlocked, is read the ordinary way.
    byob?.releaseLock();
    return null;
  }
  return byob !== null
    ? await readByob(byob, lent, declared, pool)
    : await readCopied(body, lent, declared, pool);
}

const longerThanDeclared = (declared: number) =>
  badRequest(
    "malformed_body",
    `Cannot accept request: the body is longer than its content-length (${declared} bytes)`,
  );

async function readByob(
  reader: ReadableStreamBYOBReader,
  lent: Uint8Array,
  declared: number,
  pool: BufferPool,
): Promise<RequestBody> {
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
      if (total > declared) throw longerThanDeclared(declared);
    }
  } catch (error) {
    release(pool, lent.buffer as ArrayBuffer, buffer);
    throw error;
  }
  assert(ended, "Cannot read the request body: its stream neither ended nor overflowed");
  return pooledBody(
    new Uint8Array(buffer, 0, total),
    () => release(pool, lent.buffer as ArrayBuffer, buffer),
  );
}

async function readCopied(
  body: ReadableStream<Uint8Array>,
  lent: Uint8Array,
  declared: number,
  pool: BufferPool,
): Promise<RequestBody> {
  const reader = body.getReader();
  let total = 0;
  try {
    // A bound on reads, empty pieces included: one per byte, the one that ends, and one to spare.
    for (let reads = 0;; reads++) {
      if (reads > declared + 2) {
        throw badRequest("malformed_body", "Cannot accept request: its body came in too many empty pieces");
      }
      const { value, done } = await reader.read();
      if (done) break;
      if (total + value.byteLength > declared) throw longerThanDeclared(declared);
      lent.set(value, total);
      total += value.byteLength;
    }
  } catch (error) {
    pool.give(lent);
    throw error;
  }
  return pooledBody(lent.subarray(0, total), () => pool.give(lent));
}

function pooledBody(bytes: Uint8Array, giveBack: () => void): RequestBody {
  let released = false;
  return {
    bytes,
    release: () => {
      if (released) return;
      released = true;
      giveBack();
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
