import type { AbortedTxnIndex } from "../producers/aborted_txns.ts";
import type { Segment } from "../segment/segment.ts";
import type { SparseIndex } from "../segment/sparse_index.ts";

/**
 * Bytes of a remote segment's `.log` from `start` (a batch boundary): a window of one chunk, which
 * ends on a batch boundary at `end`. A window may end inside a batch when `start + bytes.length`
 * is before `end`; the reader then asks again for a larger window.
 */
export interface RemoteChunk {
  start: number;
  bytes: Uint8Array;
  /** Where the chunk ends in the segment: a batch boundary. */
  end: number;
  /** Names the chunk for `drop`. */
  cacheKey: string;
}

/**
 * How a partition log reads segments whose `.log` was evicted: the tier service's chunk cache
 * implements it. Without one, such reads answer `RemoteReadUnavailableError`.
 */
export interface RemoteReader {
  /**
   * Bytes of the segment from `position` (a batch boundary), about `wantBytes` of them (at least
   * 64 KiB, never past the chunk's end): read from the cached chunk, or for a cold poll fetched as
   * just that range while the chunk hydrates.
   */
  chunkAt(segment: Segment, position: number, wantBytes: number): Promise<RemoteChunk>;
  /**
   * The remote segment's sparse index, from the shard's bounded index cache, which loads it from the
   * local `.index` or else from the store; null when none is usable (the read then scans from the
   * segment's start, slower but right).
   */
  index(segment: Segment): Promise<SparseIndex | null>;
  /**
   * The remote segment's aborted-transaction index from the store (`{stem}.txnindex`; empty when it
   * has none), for a segment whose local `.txnindex` is not there (restored, merged, planted).
   * Optional: without it, such a segment's aborts are not known.
   */
  abortedTxns?(segment: Segment): Promise<AbortedTxnIndex>;
  /** Bytes of this partition's remote indexes the shard's index cache holds now (optional: 0). */
  indexBytes?(): number;
  /** Forgets a chunk whose bytes failed their checksum, so the next read fetches it again. */
  drop(chunk: RemoteChunk): Promise<void>;
  /**
   * Takes back a chunk's bytes once nothing reads them any more (the poll's answer is encoded), so
   * the next window can reuse their buffer. Optional: bytes never given back are simply collected.
   */
  recycle?(chunk: RemoteChunk): void;
}

/** A remote chunk failed its checksum twice, or its object is shorter than its segment: never served. */
export class RemoteCorruptError extends Error {
  override name = "RemoteCorruptError";
  /** The start offset of the segment whose remote bytes are damaged. */
  readonly segment: number;
  constructor(
    label: string,
    segment: number,
    position: number,
    reason = "the remote data fails its checksum",
    options?: ErrorOptions,
  ) {
    super(`Cannot read partition ${label} at segment ${segment}, byte ${position}: ${reason}`, options);
    this.segment = segment;
  }
}

/**
 * A remote segment's object is gone and the segment lies below `deleted_up_to_offset`: retention
 * retired it, only the local marker lagged. The log retires it too and the read clamps forward.
 * The store's not-found error is its `cause`.
 */
export class RemoteSegmentRetiredError extends Error {
  override name = "RemoteSegmentRetiredError";
  readonly deletedUpToOffset: number;
  constructor(label: string, segment: number, deletedUpToOffset: number, options?: ErrorOptions) {
    super(
      `Cannot read partition ${label} at segment ${segment}: retention deleted it (below ${deletedUpToOffset})`,
      options,
    );
    this.deletedUpToOffset = deletedUpToOffset;
  }
}

/**
 * A remote segment's object is missing above `deleted_up_to_offset`: data loss, never an empty
 * answer. The store's not-found error is its `cause`.
 */
export class RemoteDataLossError extends Error {
  override name = "RemoteDataLossError";
  /** The start offset of the segment whose object is missing. */
  readonly segment: number;
  constructor(label: string, segment: number, key: string, options?: ErrorOptions) {
    super(
      `Cannot read partition ${label} at segment ${segment}: its object ${key} is missing from the store`,
      options,
    );
    this.segment = segment;
  }
}
