import { Buffer } from "node:buffer";
import { pieceBytesMax, type PieceSink } from "../object_store.ts";
import { MalformedError, ObjectStoreError, TransportError } from "../object_store_errors.ts";

/** An S3 answer as the transport hands it over: status, headers, and a body not read yet. */
export interface S3Response {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: AsyncIterable<Uint8Array> & { dump?: () => Promise<void> };
}

/** Bound on an error or XML answer read into memory. */
export const smallBodyBytesMax = 8 * 1024 * 1024;

/**
 * Reads a response body as the transport delivers it: undici's chunks are already pieces (well
 * under 1 MiB), so they are kept as they are, without copying; a larger one is split into views.
 */
export async function readPieces(
  body: AsyncIterable<Uint8Array>,
  bytesMax: number,
  what: string,
): Promise<Uint8Array[]> {
  const pieces: Uint8Array[] = [];
  let total = 0;
  try {
    for await (const chunk of body) {
      total += chunk.length;
      if (total > bytesMax + smallBodyBytesMax) {
        throw new MalformedError(`${what}: the answer is longer than asked`);
      }
      const view = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      for (let at = 0; at < view.length; at += pieceBytesMax) {
        pieces.push(view.subarray(at, at + pieceBytesMax));
      }
    }
  } catch (error) {
    if (error instanceof ObjectStoreError) throw error;
    throw new TransportError(`${what}: ${describeTransport(error)}`, null, { cause: error });
  }
  return pieces;
}

/**
 * Hands a response body to `onPiece`, refusing one longer than `bytesMax`. Without `gather`, chunk
 * by chunk as the transport delivers them. With it, the chunks (undici's are 16 to 64 KiB) are
 * copied into `gather` and handed on a buffer-full at a time, the last one short: a chunk fill then
 * writes whole pieces, around the page cache where they are aligned, and takes one turn of the piece
 * gate per piece rather than per chunk. `gather` is the sink's until its promise resolves.
 */
export async function streamPieces(
  body: AsyncIterable<Uint8Array>,
  bytesMax: number,
  what: string,
  onPiece: PieceSink,
  gather?: Uint8Array,
): Promise<number> {
  let received = 0;
  let handed = 0;
  let gathered = 0;
  // The sink's own failure (a full disk) is passed on as it is, not as the transport's.
  let sinkError: unknown = undefined;
  const hand = async (piece: Uint8Array) => {
    try {
      await onPiece(piece, handed);
    } catch (error) {
      sinkError = error;
      throw error;
    }
    handed += piece.length;
  };
  try {
    for await (const chunk of body) {
      if (received + chunk.length > bytesMax) {
        throw new MalformedError(`${what}: the answer is longer than asked`);
      }
      received += chunk.length;
      const view = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      if (gather === undefined) {
        for (let at = 0; at < view.length; at += pieceBytesMax) {
          await hand(view.subarray(at, at + pieceBytesMax));
        }
        continue;
      }
      // Each pass copies at least one byte, the buffer handed on and emptied whenever it is full.
      for (let at = 0; at < view.length;) {
        const copied = Math.min(view.length - at, gather.length - gathered);
        gather.set(view.subarray(at, at + copied), gathered);
        gathered += copied;
        at += copied;
        if (gathered === gather.length) {
          await hand(gather);
          gathered = 0;
        }
      }
    }
    if (gathered > 0) await hand(gather!.subarray(0, gathered));
  } catch (error) {
    if (error === sinkError || error instanceof ObjectStoreError) throw error;
    throw new TransportError(`${what}: ${describeTransport(error)}`, null, { cause: error });
  }
  return handed;
}

/** The bytes [start, endExclusive) of a whole object held as `pieces`, as views of them. */
export function slicePieces(pieces: Uint8Array[], start: number, endExclusive: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  let at = 0;
  for (const piece of pieces) {
    const from = Math.max(start, at);
    const to = Math.min(endExclusive, at + piece.length);
    if (from < to) out.push(piece.subarray(from - at, to - at));
    at += piece.length;
  }
  return out;
}

/** A small body (an error or an XML answer) as text, at most `smallBodyBytesMax` of it. */
export async function readText(response: S3Response, what: string): Promise<string> {
  const pieces = await readPieces(response.body, smallBodyBytesMax, what);
  return new TextDecoder().decode(Buffer.concat(pieces));
}

/** Reads a body to its end and drops it, so that the connection can serve the next request. */
export async function drain(response: S3Response): Promise<void> {
  if (typeof response.body.dump === "function") await response.body.dump();
  else for await (const _ of response.body) { /* discard */ }
}

/** A header's value (the first, when repeated), or "" when absent. */
export function header(response: S3Response, name: string): string {
  const value = response.headers[name];
  return Array.isArray(value) ? value[0] ?? "" : value ?? "";
}

/** An ETag without the quotes S3 puts around it. */
export function trimEtag(etag: string): string {
  return etag.replace(/^"|"$/g, "");
}

/** What a transport error says went wrong: its code (ECONNREFUSED) when it has one, else its message. */
export function describeTransport(error: unknown): string {
  const e = error as { code?: string; message?: string; cause?: { code?: string } };
  return e?.code ?? e?.cause?.code ?? e?.message ?? String(error);
}
