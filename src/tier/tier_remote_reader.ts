import type { Partition } from "../log/partition.ts";
import type { RemoteChunk, RemoteReader } from "../log/remote_reader.ts";
import type { Segment } from "../log/segment.ts";
import type { ChunkCache } from "./chunk_cache.ts";
import { chunkAt, chunkStarts } from "./chunk_layout.ts";
import { segmentKeys } from "./object_keys.ts";

/**
 * Reads a partition's evicted segments through the shard's chunk cache: chunk boundaries come
 * from the segment's sparse index (kept locally), object keys from the partition's incarnation.
 */
export class TierRemoteReader implements RemoteReader {
  readonly #partition: Partition;
  readonly #cache: ChunkCache;
  readonly #prefix: string;
  readonly #clusterId: string;
  readonly #chunkBytes: number;
  readonly #starts = new WeakMap<Segment, number[]>();

  constructor(
    partition: Partition,
    cache: ChunkCache,
    prefix: string,
    clusterId: string,
    chunkBytes: number,
  ) {
    this.#partition = partition;
    this.#cache = cache;
    this.#prefix = prefix;
    this.#clusterId = clusterId;
    this.#chunkBytes = chunkBytes;
  }

  async chunkAt(segment: Segment, position: number): Promise<RemoteChunk> {
    let starts = this.#starts.get(segment);
    if (starts === undefined) {
      starts = chunkStarts(segment.index.entries(), segment.sizeBytes, this.#chunkBytes);
      this.#starts.set(segment, starts);
    }
    const span = chunkAt(starts, segment.sizeBytes, position);
    const sb = this.#partition.superblock;
    const a = this.#partition.address;
    const keys = segmentKeys({
      prefix: this.#prefix,
      clusterId: this.#clusterId,
      streamId: a.streamId,
      topicId: a.topicId,
      partitionId: a.partitionId,
      createdRevision: sb.createdRevision,
      purgeGeneration: sb.purgeGeneration,
    }, segment.startOffset);
    const cacheKey =
      `${a.streamId}/${a.topicId}/${a.partitionId}/${sb.createdRevision}-${sb.purgeGeneration}/` +
      `${segment.stem}.log_chunks/${span.start}`;
    // A reader further behind the head than the cache could hold is a backfill: its chunks enter
    // the LRU at the cold end, and its hits do not promote them, so it cannot evict the working
    // set near the head.
    const cold = this.#bytesFromHead(segment, span.start) > this.#cache.budgetBytes;
    const bytes = await this.#cache.readChunk(keys.log, cacheKey, span, cold);
    return { start: span.start, bytes, cacheKey };
  }

  #bytesFromHead(segment: Segment, position: number): number {
    let behind = segment.sizeBytes - position;
    let after = false;
    for (const s of this.#partition.log.segments) {
      if (after) behind += s.sizeBytes;
      if (s === segment) after = true;
    }
    return behind;
  }

  drop(chunk: RemoteChunk): Promise<void> {
    return this.#cache.drop(chunk.cacheKey);
  }
}
