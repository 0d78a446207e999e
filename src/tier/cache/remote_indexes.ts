import { Counter, Gauge, type Registry } from "prom-client";
import type { Segment } from "../../log/segment/segment.ts";
import { readIndexFile, SparseIndex } from "../../log/segment/sparse_index.ts";
import { NotFoundError } from "../../objectstore/object_store_errors.ts";
import { assert, isBug } from "../../runtime/assert.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import { writeWholeFile } from "../../runtime/disk/file_ops.ts";
import type { Logger } from "../../runtime/logger.ts";
import { chunkStarts } from "./chunk_layout.ts";

/** What a read of a remote segment needs of its index. */
export interface RemoteIndex {
  /** Null when none is usable: the read scans from the segment's start. */
  index: SparseIndex | null;
  /** Where the segment's chunks start (`chunkStarts`): one chunk for the whole segment without an index. */
  chunkStarts: number[];
}

/** What an entry costs besides its index's and its chunk starts' bytes: the key and the objects. */
const entryOverheadBytes = 256;

/** The index caches' metrics, shared by every shard's cache in one registry. */
export class IndexCacheMetrics {
  readonly hits: Counter;
  readonly misses: Counter;
  readonly evictions: Counter;
  readonly fetches: Counter;
  readonly fetchFailures: Counter;
  readonly #caches = new Set<RemoteIndexes>();

  constructor(registry: Registry) {
    const registers = [registry];
    const counter = (name: string, help: string) => new Counter({ name, help, registers });
    this.hits = counter(
      "strata_index_cache_hits_total",
      "Remote segments' index lookups served from memory.",
    );
    this.misses = counter(
      "strata_index_cache_misses_total",
      "Remote segments' index lookups that loaded the index: from the local .index, else from the store.",
    );
    this.evictions = counter(
      "strata_index_cache_evictions_total",
      "Indexes dropped to stay within the budget.",
    );
    this.fetches = counter(
      "strata_index_cache_fetches_total",
      "Indexes fetched from the store (no local .index).",
    );
    this.fetchFailures = counter(
      "strata_cache_index_fetch_failures_total",
      "Remote segments' .index fetches that failed: the read scans the segment from its start instead.",
    );
    const caches = this.#caches;
    new Gauge({
      name: "strata_index_cache_bytes",
      help: "Bytes of remote segments' indexes held in memory, over every shard.",
      registers,
      collect() {
        this.set([...caches].reduce((n, c) => n + c.usedBytes, 0));
      },
    });
  }

  add(cache: RemoteIndexes): void {
    this.#caches.add(cache);
  }
}

export interface RemoteIndexesDeps {
  disk: Disk;
  /** Fetches a whole `.index` object: the chunk cache's `fetchIndex` (one ranged GET, under its slots). */
  fetchIndex(objectKey: string, sizeBytes: number): Promise<Uint8Array>;
  /** `[tiered_storage.cache] index_size` divided among the shards. */
  budgetBytes: number;
  /** `[tiered_storage.cache] chunk_size`: the chunk starts kept with each index. */
  chunkBytes: number;
  logger: Logger;
  metrics?: IndexCacheMetrics;
}

interface Loaded {
  value: RemoteIndex;
  /** False for an answer a later read should not get from memory: a failed fetch, tried again then. */
  keep: boolean;
}

/**
 * A shard's remote segments' indexes, held in memory at most `budgetBytes` of them, the least
 * recently used dropped first. A remote segment costs nothing here until it is read: its index is
 * loaded then, from its local `.index` when that is there, else fetched from the store and kept
 * locally for the next load (docs/DESIGN.md, "Cost follows what is local"). Concurrent reads of one
 * segment share its load. What a node holds in memory is then bounded by this budget, whatever the
 * bucket holds.
 */
export class RemoteIndexes {
  readonly #deps: RemoteIndexesDeps;
  /** Held indexes by key, least recently used first (a hit moves its entry to the end). */
  readonly #held = new Map<string, { value: RemoteIndex; sizeBytes: number; owner: string }>();
  /** Bytes held per owner (a partition's label), for owners with any: at most one per held index. */
  readonly #bytesByOwner = new Map<string, number>();
  /** Loads in flight by key: one per segment being read, so bounded by the reads in flight. */
  readonly #loading = new Map<string, Promise<Loaded>>();
  #usedBytes = 0;

  constructor(deps: RemoteIndexesDeps) {
    assert(deps.budgetBytes > 0, "Cannot hold remote indexes: the budget must be positive");
    this.#deps = deps;
    deps.metrics?.add(this);
  }

  get usedBytes(): number {
    return this.#usedBytes;
  }

  get count(): number {
    return this.#held.size;
  }

  /** Bytes of the indexes held for `owner` (the partition that read them). */
  bytesOf(owner: string): number {
    return this.#bytesByOwner.get(owner) ?? 0;
  }

  /**
   * The index of remote `segment` whose `.index` object is `objectKey` (unique to the segment's
   * incarnation, so it is also the cache key), counted as `owner`'s (the reading partition's label).
   * A store that answers the object is gone rejects with its `NotFoundError`, for the caller to tell
   * retention from data loss.
   */
  async get(segment: Segment, objectKey: string, owner: string): Promise<RemoteIndex> {
    const held = this.#held.get(objectKey);
    if (held !== undefined) {
      this.#held.delete(objectKey);
      this.#held.set(objectKey, held);
      this.#deps.metrics?.hits.inc();
      return held.value;
    }
    let loading = this.#loading.get(objectKey);
    if (loading === undefined) {
      this.#deps.metrics?.misses.inc();
      loading = this.#load(segment, objectKey).then((loaded) => {
        if (loaded.keep) this.#hold(objectKey, loaded.value, owner);
        return loaded;
      }).finally(() => this.#loading.delete(objectKey));
      this.#loading.set(objectKey, loading);
    }
    return (await loading).value;
  }

  #hold(key: string, value: RemoteIndex, owner: string): void {
    const sizeBytes = (value.index?.sizeBytes ?? 0) + value.chunkStarts.length * 8 + entryOverheadBytes;
    if (sizeBytes > this.#deps.budgetBytes || this.#held.has(key)) return;
    this.#held.set(key, { value, sizeBytes, owner });
    this.#count(owner, sizeBytes);
    for (const [oldest, entry] of this.#held) {
      if (this.#usedBytes <= this.#deps.budgetBytes) break;
      this.#held.delete(oldest);
      this.#count(entry.owner, -entry.sizeBytes);
      this.#deps.metrics?.evictions.inc();
    }
  }

  /** Adds `sizeBytes` (negative when dropped) to the total and to `owner`'s. */
  #count(owner: string, sizeBytes: number): void {
    this.#usedBytes += sizeBytes;
    const owned = (this.#bytesByOwner.get(owner) ?? 0) + sizeBytes;
    assert(owned >= 0 && this.#usedBytes >= 0, "held index bytes never go below zero");
    if (owned === 0) this.#bytesByOwner.delete(owner);
    else this.#bytesByOwner.set(owner, owned);
  }

  async #load(segment: Segment, objectKey: string): Promise<Loaded> {
    const local = await this.#readLocal(segment);
    if (local !== null) return this.#loaded(segment, local, true);
    const indexBytes = segment.marker?.indexSizeBytes ?? 0;
    if (indexBytes === 0) return this.#loaded(segment, null, true);
    let bytes: Uint8Array;
    try {
      this.#deps.metrics?.fetches.inc();
      bytes = await this.#deps.fetchIndex(objectKey, indexBytes);
    } catch (error) {
      if (isBug(error) || error instanceof NotFoundError) throw error;
      // Counted; this read scans from the segment's start, and the next one fetches again.
      this.#deps.metrics?.fetchFailures.inc();
      this.#deps.logger.warn("Cannot fetch a remote segment's index", { key: objectKey, error });
      return this.#loaded(segment, null, false);
    }
    const fetched = SparseIndex.ofBytes(bytes);
    if (fetched === null || !fetched.fitsSegment(segment.sizeBytes)) {
      this.#deps.logger.warn("a remote segment's index does not fit its segment; it is not used", {
        key: objectKey,
      });
      return this.#loaded(segment, null, true);
    }
    await this.#keepLocally(segment, bytes);
    return this.#loaded(segment, fetched, true);
  }

  /** The segment's local `.index`, when it is there, whole and fits the segment. */
  async #readLocal(segment: Segment): Promise<SparseIndex | null> {
    try {
      const local = await readIndexFile(this.#deps.disk, segment.indexPath);
      return local !== null && local.fitsSegment(segment.sizeBytes) ? local : null;
    } catch (error) {
      if (isBug(error)) throw error;
      // An unreadable local copy: the store's is read instead, and written over it.
      this.#deps.logger.warn("Cannot read a remote segment's local index; fetching it", {
        path: segment.indexPath,
        error,
      });
      return null;
    }
  }

  /** Keeps a fetched index beside the segment's marker, so that its next load is local. */
  async #keepLocally(segment: Segment, bytes: Uint8Array): Promise<void> {
    try {
      await writeWholeFile(this.#deps.disk, segment.indexPath, bytes);
    } catch (error) {
      if (isBug(error)) throw error;
      // The index serves from memory all the same; the next load after an eviction fetches again.
      this.#deps.logger.warn("Cannot keep a remote segment's index locally", {
        path: segment.indexPath,
        error,
      });
    }
  }

  #loaded(segment: Segment, index: SparseIndex | null, keep: boolean): Loaded {
    return {
      value: { index, chunkStarts: chunkStarts(index, segment.sizeBytes, this.#deps.chunkBytes) },
      keep,
    };
  }
}
