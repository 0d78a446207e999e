import { MalformedError } from "./object_store_errors.ts";

/**
 * The object store contract every backend (fs, sim, s3) implements: one logical operation per
 * method, plain string keys, bodies as pieces. Backends make one attempt per call and throw the
 * typed errors of `object_store_errors.ts`; retries and deadlines live above them
 * (`retrying_object_store.ts`).
 */
export interface ObjectStore {
  /** Writes an object from a fresh stream of pieces; never takes a whole-object buffer. */
  put(key: string, body: BodySource, options: PutOptions): Promise<PutResult>;
  /**
   * Bytes [start, endExclusive) of an object, as pieces of at most 1 MiB. With `ifNoneMatch`, an
   * object that still has that ETag throws `NotModifiedError` instead (S3's conditional GET).
   */
  getRange(key: string, start: number, endExclusive: number, options?: GetOptions): Promise<Uint8Array[]>;
  /**
   * Bytes [start, endExclusive) of an object handed to `onPiece` as they arrive, in order, one at a
   * time (the next only once the promise of the one before resolved); resolves with the byte count.
   * Nothing holds the whole range: a chunk fill writes each piece to its file as it comes.
   */
  streamRange(
    key: string,
    start: number,
    endExclusive: number,
    onPiece: PieceSink,
    options?: OpOptions,
  ): Promise<number>;
  /** Size, user metadata and etag, or null when the object does not exist. */
  head(key: string, options?: OpOptions): Promise<ObjectHead | null>;
  /** One page of keys under `prefix`, sorted, after `startAfter`. */
  list(prefix: string, options?: ListOptions): Promise<ListPage>;
  /** Deletes keys; a missing key counts as deleted. One result per key. */
  delete(keys: readonly string[], options?: OpOptions): Promise<DeleteResult[]>;
}

/**
 * Takes one piece of a streamed range, at `position` bytes into the range. The piece is the sink's
 * only until its promise resolves: the store may read the next piece into the same buffer. A
 * retried range is streamed again from position 0, so a sink writes at `position`, not at its end.
 */
export type PieceSink = (piece: Uint8Array, position: number) => Promise<void>;

/**
 * A body that can be produced again for a retry: each call starts a new stream of pieces. A piece
 * is the store's to read until it pulls the next one, since the source may read every piece into
 * one buffer (the uploader does, to allocate nothing per piece); a store that keeps a piece longer
 * copies it.
 */
export type BodySource = () => AsyncIterable<Uint8Array>;

export interface OpOptions {
  /** Bound on this one attempt; the retry layer passes what is left of the deadline. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface GetOptions extends OpOptions {
  /** Read only when the object's ETag is not this one. */
  ifNoneMatch?: string;
}

export interface PutOptions extends OpOptions {
  /** Exact body length in bytes; a body that differs is refused. */
  sizeBytes: number;
  /** User metadata (lower-case keys, string values), returned by `head`. */
  metadata: Record<string, string>;
  /** Create only: fail with `PreconditionFailedError` when the key exists. */
  ifAbsent: boolean;
  /** CRC32 of the body (S3's `x-amz-checksum-crc32`) when known in advance; a body that does not match is refused. */
  crc32?: number;
}

export interface PutResult {
  etag: string;
}

export interface ObjectHead {
  sizeBytes: number;
  metadata: Record<string, string>;
  etag: string;
}

export interface ListOptions extends OpOptions {
  startAfter?: string;
  /** At most 1000, as S3 allows. */
  maxKeys?: number;
}

export interface ListedObject {
  key: string;
  sizeBytes: number;
  /**
   * When the object was written, in wall-clock ms since the epoch, by the store's clock: what
   * the deletion grace is measured against (no object younger than `delete_grace` is deleted).
   */
  lastModifiedMs: number;
  /** What `head` and `put` call the object's ETag: a watcher reads again only what changed. */
  etag: string;
}

export interface ListPage {
  objects: ListedObject[];
  /** Pass as `startAfter` for the next page; null on the last page. */
  nextStartAfter: string | null;
}

export interface DeleteResult {
  key: string;
  /** Null when deleted (or already absent). */
  error: Error | null;
}

/** The largest piece a backend hands out or accepts at once. */
export const pieceBytesMax = 1024 * 1024;

/** S3's page and batch limit. */
export const keysPerRequestMax = 1000;

/** Splits a buffer into pieces of at most `pieceBytesMax`, as views (no copies). */
export function toPieces(bytes: Uint8Array): Uint8Array[] {
  const pieces: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += pieceBytesMax) {
    pieces.push(bytes.subarray(at, at + pieceBytesMax));
  }
  return pieces;
}

/** Keys are relative paths of non-empty segments, never "." or "..": safe as file paths too. */
export function checkKey(key: string): string {
  const segments = key.split("/");
  const bad = key.length === 0 || key.length > 1024 || key.includes("\u0000") ||
    segments.some((s) => s === "" || s === "." || s === "..");
  if (bad) {
    throw new MalformedError(`Cannot use object key ${JSON.stringify(key.slice(0, 100))}: not a valid key`);
  }
  return key;
}
