import type {
  BodySource,
  DeleteResult,
  ListOptions,
  ListPage,
  ObjectHead,
  PieceSink,
  PutOptions,
  PutResult,
} from "./object_store.ts";

/** Options of an operation with a deadline: when the whole of it, retries included, must end. */
export interface DeadlineOptions {
  /** Absolute time on the injected clock by which the whole operation, retries included, ends. */
  deadlineAtMs?: number;
  signal?: AbortSignal;
}

/** A GET's options under a deadline: `ifNoneMatch` makes it conditional (`NotModifiedError`). */
export type DeadlineGetOptions = DeadlineOptions & { ifNoneMatch?: string };

/** A put's options under a deadline: what the backend takes, less the per-attempt timeout. */
export type DeadlinePutOptions = Omit<PutOptions, "timeoutMs"> & DeadlineOptions;

/** A listing's options under a deadline: what the backend takes, less the per-attempt timeout. */
export type DeadlineListOptions = Omit<ListOptions, "timeoutMs"> & DeadlineOptions;

/**
 * The object store as the layers above `src/objectstore/` use it: the operations of `ObjectStore`,
 * each under an absolute deadline (the caller's, or a default for its kind) instead of a timeout per
 * attempt. An implementation decides how many attempts fit before the deadline and throws the typed
 * errors of `object_store_errors.ts` when none succeeded; `RetryingObjectStore` is the one in use.
 */
export interface DeadlineObjectStore {
  /** Writes an object from a body that can be produced again for each attempt. */
  put(key: string, body: BodySource, options: DeadlinePutOptions): Promise<PutResult>;
  /** Bytes [start, endExclusive) of an object, as pieces of at most 1 MiB. */
  getRange(
    key: string,
    start: number,
    endExclusive: number,
    options?: DeadlineGetOptions,
  ): Promise<Uint8Array[]>;
  /**
   * Bytes [start, endExclusive) of an object handed to `onPiece` as they arrive; a retried attempt
   * streams the range again from position 0. Resolves with the byte count of the attempt that succeeded.
   */
  streamRange(
    key: string,
    start: number,
    endExclusive: number,
    onPiece: PieceSink,
    options?: DeadlineOptions,
  ): Promise<number>;
  /** Size, user metadata and etag, or null when the object does not exist. */
  head(key: string, options?: DeadlineOptions): Promise<ObjectHead | null>;
  /** One page of keys under `prefix`, sorted, after `startAfter`. */
  list(prefix: string, options?: DeadlineListOptions): Promise<ListPage>;
  /** Deletes keys; a missing key counts as deleted. One result per key. */
  delete(keys: readonly string[], options?: DeadlineOptions): Promise<DeleteResult[]>;
}
