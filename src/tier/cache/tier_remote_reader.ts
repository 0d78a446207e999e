import { AbortedTxnIndex } from "../../log/producers/aborted_txns.ts";
import type { SnapshotObjectStore } from "../bucket/producer_snapshot_object.ts";
import { readTxnIndexObject } from "../bucket/txn_index_object.ts";
import type { Partition } from "../../log/partition/partition.ts";
import {
  type RemoteChunk,
  RemoteCorruptError,
  RemoteDataLossError,
  type RemoteReader,
  RemoteSegmentRetiredError,
} from "../../log/remote/remote_reader.ts";
import { objectStem, type Segment } from "../../log/segment/segment.ts";
import { findSegmentIndex } from "../../log/read/segment_reads.ts";
import type { SparseIndex } from "../../log/segment/sparse_index.ts";
import {
  remoteWindowFirstBytes,
  remoteWindowMaxBytes,
  remoteWindowRoomBytes,
} from "../../log/remote/remote_walk.ts";
import { NotFoundError } from "../../objectstore/object_store_errors.ts";
import type { CacheMetrics } from "./cache_metrics.ts";
import type { ChunkCache } from "./chunk_cache.ts";
import type { ChunkRead, ChunkRef } from "./cache_core.ts";
import { ChunkObjectShortError } from "./chunk_files.ts";
import { chunkAt, type ChunkSpan } from "./chunk_layout.ts";
import type { RemoteIndex, RemoteIndexes } from "./remote_indexes.ts";
import {
  incarnationOf,
  incarnationPath,
  objectIncarnation,
  type PartitionIncarnation,
  segmentKeys,
} from "../bucket/object_keys.ts";

/** A cold poll's first range: the walk's own bytes, 64 KiB to 1 MiB (docs/DESIGN.md, "The chunk cache"). */
export const firstRangeBytesMin = 64 * 1024;
export const firstRangeBytesMax = 1024 * 1024;
/** The least a poll reads from a cached chunk at once. */
const windowBytesMin = 64 * 1024;
/**
 * The size of the pooled window buffers: a poll's first window (`remoteWindowFirstBytes` plus the
 * room to finish a batch), which is all most polls read.
 */
export const pooledWindowBytes = remoteWindowFirstBytes + remoteWindowRoomBytes;
/** Bound on the window buffers a shard keeps for reuse (8 MiB of them). */
export const pooledWindowsMax = 64;
/** The size of the large window buffers: the largest window a walk asks for, with its room (1 MiB). */
export const largeWindowBytes = remoteWindowMaxBytes + remoteWindowRoomBytes;
/**
 * Bound on the large window buffers a shard lends at once (16 MiB of them): a Kafka fetch of 10 MiB
 * from evicted segments holds about eleven until its answer is written.
 */
export const largeWindowsMax = 16;

/** Where a chunk's file lies in the cache directory: under its incarnation and segment's object. */
function chunkCacheKey(incarnation: PartitionIncarnation, segment: Segment, span: ChunkSpan): string {
  const stem = objectStem(segment.startOffset, segment.mergedEndOffset);
  return `${incarnationPath(incarnation)}${stem}.log_chunks/${span.start}`;
}

export interface TierRemoteReaderOptions {
  prefix: string;
  clusterId: string;
  chunkBytes: number;
  /** `readahead_max`: chunks fetched ahead of a sequential reader at most; 0 turns readahead off. */
  readaheadChunksMax: number;
  /** The shard's remote segments' indexes: loaded on a segment's first read, held within a budget. */
  indexes: RemoteIndexes;
  /** Where segments' aborted-transaction index objects are read from; absent: they are not. */
  sidecars?: SnapshotObjectStore;
  metrics?: CacheMetrics;
}

/**
 * Reads a partition's evicted segments through the shard's chunk cache: chunk boundaries come
 * from the segment's sparse index (the shard's `RemoteIndexes`, which load it on the segment's
 * first read), object keys from the partition's incarnation. A cold poll fetches only its own range first; a sequential reader gets
 * readahead that doubles from one chunk up to `readahead_max`.
 */
export class TierRemoteReader implements RemoteReader {
  readonly #partition: Partition;
  readonly #cache: ChunkCache;
  readonly #o: TierRemoteReaderOptions;
  /** The last chunk served, to tell a sequential reader, and the readahead it has earned. */
  #last: { segment: Segment; chunk: number; chunks: number } | null = null;
  #readaheadChunks = 1;

  constructor(partition: Partition, cache: ChunkCache, options: TierRemoteReaderOptions) {
    this.#partition = partition;
    this.#cache = cache;
    this.#o = options;
  }

  async chunkAt(segment: Segment, position: number, wantBytes: number): Promise<RemoteChunk> {
    const { index, chunkStarts: starts } = await this.#remoteIndex(segment);
    const span = chunkAt(starts, segment.sizeBytes, position);
    const read = this.#read(segment, span, position, wantBytes, index);
    try {
      const chunk = await this.#cache.read(read);
      this.#readahead(segment, span, starts);
      return chunk;
    } catch (error) {
      if (error instanceof ChunkObjectShortError) {
        const reason = `its object ${read.objectKey} is shorter than the segment`;
        throw new RemoteCorruptError(this.#partition.log.label, segment.startOffset, position, reason, {
          cause: error,
        });
      }
      throw this.#missing(error, segment, read.objectKey);
    }
  }

  async index(segment: Segment): Promise<SparseIndex | null> {
    return (await this.#remoteIndex(segment)).index;
  }

  /** The segment's index and chunk starts from the shard's cache; a gone object is retired or lost. */
  async #remoteIndex(segment: Segment): Promise<RemoteIndex> {
    const key = this.#keys(segment).index;
    try {
      return await this.#o.indexes.get(segment, key, this.#partition.log.label);
    } catch (error) {
      throw this.#missing(error, segment, key);
    }
  }

  /** The segment's aborted-transaction index object (`readTxnIndexObject`); empty without a store to read. */
  async abortedTxns(segment: Segment): Promise<AbortedTxnIndex> {
    const store = this.#o.sidecars;
    return store === undefined
      ? new AbortedTxnIndex()
      : await readTxnIndexObject(store, this.#keys(segment).txnindex);
  }

  indexBytes(): number {
    return this.#o.indexes.bytesOf(this.#partition.log.label);
  }

  drop(chunk: RemoteChunk): Promise<void> {
    return this.#cache.drop(chunk.cacheKey);
  }

  recycle(chunk: RemoteChunk): void {
    this.#cache.recycleWindow(chunk.bytes);
  }

  /**
   * Where a cold poll's first range ends: the first batch boundary at or past its own bytes (64 KiB
   * to 1 MiB). Null when the whole chunk is fetched anyway: little more than the walk needs, or no
   * index to snap to.
   */
  #firstRangeEnd(
    index: SparseIndex | null,
    span: ChunkSpan,
    position: number,
    wantBytes: number,
  ): number | null {
    if (span.end - position <= firstRangeBytesMax || index === null) return null;
    const target = position + Math.min(firstRangeBytesMax, Math.max(firstRangeBytesMin, wantBytes));
    const end = index.ceilingPosition(target);
    if (end === null || end >= span.end || end - position > 2 * firstRangeBytesMax) return null;
    return end;
  }

  /**
   * Sequential reads earn readahead: one chunk, doubling up to `readahead_max`; a jump resets it.
   * A sequential reader's readahead runs past the segment's end into the chain's next remote segments
   * (whose indexes it loads for their chunk starts), so a chain of segments no larger than a chunk
   * is read ahead too.
   */
  #readahead(segment: Segment, span: ChunkSpan, starts: readonly number[]): void {
    if (this.#o.readaheadChunksMax === 0) return;
    const last = this.#last;
    if (last !== null && last.segment === segment && last.chunk === span.chunk) return;
    const sequential = last !== null &&
      ((last.segment === segment && span.chunk === last.chunk + 1) ||
        (last.segment !== segment && span.chunk === 0 && last.chunk === last.chunks - 1));
    this.#readaheadChunks = sequential ? Math.min(this.#readaheadChunks * 2, this.#o.readaheadChunksMax) : 1;
    this.#last = { segment, chunk: span.chunk, chunks: starts.length };
    const ahead: ChunkRef[] = [];
    for (let k = span.chunk + 1; k < starts.length && ahead.length < this.#readaheadChunks; k++) {
      ahead.push(
        this.#chunk(segment, { chunk: k, start: starts[k]!, end: starts[k + 1] ?? segment.sizeBytes }),
      );
    }
    // Only a sequential reader reads ahead into the next segments: a random read of a segment of
    // one chunk then costs one GET.
    const wanted = sequential ? this.#readaheadChunks - ahead.length : 0;
    this.#cache.prefetchAll(wanted === 0 ? ahead : this.#chunksAfter(segment, ahead, wanted));
  }

  /**
   * `ahead` and then the first `wanted` chunks of the remote segments after `segment`. Each pass
   * adds a chunk (a segment has at least one) or ends at the chain's last remote segment.
   */
  async #chunksAfter(segment: Segment, ahead: ChunkRef[], wanted: number): Promise<ChunkRef[]> {
    const chunks = [...ahead];
    let next = this.#remoteAfter(segment);
    for (let added = 0; next !== null && added < wanted; next = this.#remoteAfter(next)) {
      const { chunkStarts: starts } = await this.#remoteIndex(next);
      for (let k = 0; k < starts.length && added < wanted; k++, added++) {
        chunks.push(this.#chunk(next, { chunk: k, start: starts[k]!, end: starts[k + 1] ?? next.sizeBytes }));
      }
    }
    return chunks;
  }

  /** The remote segment after `segment` in the partition's chain, or null (found by bisection). */
  #remoteAfter(segment: Segment): Segment | null {
    const segments = this.#partition.log.segments;
    const i = findSegmentIndex(segments, segment.startOffset);
    const next = segments[i + 1];
    return segments[i] === segment && next !== undefined && next.location === "remote" ? next : null;
  }

  #missing(error: unknown, segment: Segment, key: string): unknown {
    if (!(error instanceof NotFoundError)) return error;
    const deletedUpTo = this.#partition.superblock.deletedUpToOffset;
    if (segment.endOffset < deletedUpTo) {
      return new RemoteSegmentRetiredError(this.#partition.log.label, segment.startOffset, deletedUpTo, {
        cause: error,
      });
    }
    this.#o.metrics?.dataLoss.inc();
    return new RemoteDataLossError(this.#partition.log.label, segment.startOffset, key, { cause: error });
  }

  #keys(segment: Segment) {
    return segmentKeys(this.#incarnation(segment), segment.startOffset, segment.mergedEndOffset);
  }

  /** Whose keys the segment's objects have: the partition's, or a restore's source's. */
  #incarnation(segment: Segment): PartitionIncarnation {
    const own = incarnationOf(this.#o.prefix, this.#o.clusterId, this.#partition);
    return objectIncarnation(own, this.#partition.superblock.restoredFrom, segment.startOffset);
  }

  #chunk(segment: Segment, span: ChunkSpan): ChunkRef {
    const incarnation = this.#incarnation(segment);
    return {
      objectKey: segmentKeys(incarnation, segment.startOffset, segment.mergedEndOffset).log,
      cacheKey: chunkCacheKey(incarnation, segment, span),
      span,
    };
  }

  #read(
    segment: Segment,
    span: ChunkSpan,
    position: number,
    wantBytes: number,
    index: SparseIndex | null,
  ): ChunkRead {
    const incarnation = this.#incarnation(segment);
    return {
      objectKey: segmentKeys(incarnation, segment.startOffset, segment.mergedEndOffset).log,
      cacheKey: chunkCacheKey(incarnation, segment, span),
      span,
      // A reader further behind the head than the cache could hold is a backfill: its chunks enter
      // the LRU at the cold end, and its hits do not promote them, so it cannot evict the working
      // set near the head.
      cold: this.#fartherThanCache(segment, position),
      position,
      // A poll reads only what it wants from the chunk file (with room to finish its last batch).
      windowBytes: Math.max(windowBytesMin, wantBytes + remoteWindowRoomBytes),
      firstRangeEnd: this.#firstRangeEnd(index, span, position, wantBytes),
    };
  }

  /**
   * Whether the reader at `position` of `segment` is further behind the log's head than the cache
   * holds: summed from the segment on, stopping once past the budget.
   */
  #fartherThanCache(segment: Segment, position: number): boolean {
    const segments = this.#partition.log.segments;
    const budget = this.#cache.budgetBytes;
    let behind = segment.sizeBytes - position;
    // Each pass adds a segment's size: bounded by the chain, and stops at the budget.
    for (let i = findSegmentIndex(segments, segment.startOffset) + 1; i < segments.length; i++) {
      if (behind > budget) return true;
      behind += segments[i]!.sizeBytes;
    }
    return behind > budget;
  }
}
