import { assert, rethrowBug } from "../../runtime/assert.ts";
import type { RemoteChunk } from "../../log/remote/remote_reader.ts";
import type { DeadlineObjectStore } from "../../objectstore/retrying_object_store.ts";
import { type BufferPool, concatBytes } from "../../runtime/memory/buffers.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import { type Disk, DiskError } from "../../runtime/disk/disk.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { PieceGate } from "../../runtime/cooperation/piece_gate.ts";
import type { Semaphore } from "../../runtime/cooperation/semaphore.ts";
import type { TokenBucket } from "../../runtime/cooperation/token_bucket.ts";
import { CacheAccessTable, isAccessTableFile } from "./cache_access_table.ts";
import * as cacheCore from "./cache_core.ts";
import type { ChunkRead, ChunkRef } from "./cache_core.ts";
import type { CacheMetrics } from "./cache_metrics.ts";
import { ChunkFiles, ChunkFileShortError, ChunkObjectShortError } from "./chunk_files.ts";
import type { PieceSink } from "../../objectstore/object_store.ts";
import type { ChunkSpan } from "./chunk_layout.ts";

/** Bound on `idle`'s rounds of waiting for work that work in flight started. */
const idleRoundsMax = 1000;

/** A poll waited `fetch_timeout` for a chunk; the fetch goes on, so a retry is likely warm. */
export class FetchTimeoutError extends Error {
  override name = "FetchTimeoutError";
  constructor(timeoutMs: number) {
    super(`Cannot read remote data within ${timeoutMs} ms: the fetch continues; retry shortly`);
  }
}

/** The cache has no room even after a trim: the poll answers a transient 503. */
export class CacheFullError extends Error {
  override name = "CacheFullError";
  constructor(bytes: number) {
    super(`Cannot cache a chunk of ${bytes} bytes: the chunk cache is full; retry shortly`);
  }
}

export interface ChunkCacheDeps {
  disk: Disk;
  store: DeadlineObjectStore;
  clock: Clock;
  logger: Logger;
  /** This shard's cache directory. */
  dir: string;
  config: cacheCore.CacheConfig;
  /** How long a poll waits for a chunk (`fetch_timeout`); the fetch itself may run longer. */
  fetchTimeoutMs: number;
  /** Deadline of one fetch, retries included: it outlives the poll that started it. */
  fetchDeadlineMs: number;
  /** `fetch_concurrency`: fetches for polls hold their own permits, never the uploads'. */
  fetchSlots: Semaphore;
  /** `fetch_bandwidth`, this shard's share. */
  fetchBandwidth: TokenBucket;
  metrics?: CacheMetrics;
  /** The shard's piece gate: each piece written into a chunk file waits for its turn (else a yield). */
  gate?: PieceGate;
  /** Buffers for the windows polls read, given back through `recycleWindow` once answered. */
  windowPool?: BufferPool;
  /** Buffers for larger windows (a Kafka fetch's), lent while fewer than its bound are out. */
  largeWindowPool?: BufferPool;
}

/**
 * A shard's chunk cache: chunks of remote `.log` objects as files under the shard's cache
 * directory. The shell around the pure core (`cache_core.ts`), which decides every read, fetch,
 * reservation and trim; this runs the effects. A cached chunk is read from its file with no
 * request. A miss reserves space first, issues one ranged GET (`RangeFetcher`, below), writes a
 * `.part` file piece by piece and renames it into place (`chunk_files.ts`); concurrent readers of
 * one chunk share that fetch. A cold poll fetches only its own range first and the chunk hydrates
 * behind it. A poll waits at most `fetch_timeout`; the fetch goes on.
 */
export class ChunkCache {
  readonly #deps: ChunkCacheDeps;
  #state: cacheCore.CacheState;
  readonly #files: ChunkFiles;
  readonly #fetcher: RangeFetcher;
  readonly #accessTable: CacheAccessTable;
  /** The chunk fetch of each chunk the core has one in flight for: readers wait on it. */
  readonly #chunkFetches = new Map<string, Promise<void>>();
  /** The bytes of each first range the core has in flight: the readers it holds share them. */
  readonly #firstRanges = new Map<string, Promise<Uint8Array>>();
  /** The trims' chunk deletions and the access-table saves in flight, which nobody waits for. */
  readonly #background = new Set<Promise<void>>();

  private constructor(deps: ChunkCacheDeps, files: ChunkFiles, accessTable: CacheAccessTable) {
    this.#deps = deps;
    this.#state = cacheCore.initialCache(deps.config);
    this.#files = files;
    this.#accessTable = accessTable;
    this.#fetcher = new RangeFetcher(deps);
    deps.metrics?.addSource(this);
  }

  /**
   * Opens the cache: walks its directory, deletes `.part` leftovers of interrupted fetches, and
   * accounts every chunk already there in the saved LRU order, so a restart keeps the cache.
   */
  static async open(deps: ChunkCacheDeps): Promise<ChunkCache> {
    const files = new ChunkFiles(deps);
    const accessTable = new CacheAccessTable(deps.disk, deps.dir);
    const found = await files.walk(isAccessTableFile);
    const savedOrder = await accessTable.read(deps.logger);
    const cache = new ChunkCache(deps, files, accessTable);
    const step = cacheCore.opened(cache.#state, { files: found, savedOrder });
    cache.#state = step.state;
    // A smaller budget than before: what does not fit goes now, file and all.
    for (const effect of step.effects) {
      if (effect.kind === "delete_chunk") {
        await files.delete(effect.key).catch((error) => {
          rethrowBug(error, deps.logger, "deleting a chunk file threw; the cache does not open");
          deps.logger.warn("cache open could not delete a chunk over the budget", { key: effect.key, error });
        });
      }
    }
    return cache;
  }

  /** Saves the LRU order (every `accessOrderSaveIntervalMs` from the tick, and at shutdown). */
  save(): Promise<void> {
    return this.#accessTable.save(cacheCore.accessOrder(this.#state));
  }

  /** Saves the access table and closes the chunk files held open; called at shutdown. */
  async close(): Promise<void> {
    this.#files.closeAll();
    await this.save();
  }

  get budgetBytes(): number {
    return this.#state.config.budgetBytes;
  }

  get usedBytes(): number {
    return this.#state.usedBytes;
  }

  get chunkCount(): number {
    return this.#state.chunks.size;
  }

  /**
   * A window of one chunk for a poll, warm or cold: from the chunk's file when it is cached;
   * otherwise as the core decides, from the chunk's fetch in flight or a new one, or from a cold
   * poll's first range. A cached chunk whose file is gone is fetched again, whole; so is one whose
   * file is shorter than the chunk (truncated on disk), counted and deleted first, at most once a read.
   */
  async read(r: ChunkRead): Promise<RemoteChunk> {
    assert(
      r.position >= r.span.start && r.position < r.span.end && r.windowBytes > 0,
      "window inside the chunk",
    );
    try {
      return await this.#readOnce(r);
    } catch (error) {
      if (!(error instanceof ChunkFileShortError)) throw error;
      await this.#dropShortFile(r.cacheKey, error);
    }
    // Once only: a file short again right after its fetch is a disk that loses what it is given.
    // It is dropped again, so that a later read fetches it afresh, and the read fails typed.
    try {
      return await this.#readOnce({ ...r, firstRangeEnd: null });
    } catch (error) {
      if (error instanceof ChunkFileShortError) await this.#dropShortFile(r.cacheKey, error);
      throw error;
    }
  }

  async #readOnce(r: ChunkRead): Promise<RemoteChunk> {
    if (cacheCore.isCached(this.#state, r.cacheKey)) {
      try {
        const bytes = await this.#files.readWindow(r.cacheKey, r.span, r.position, r.windowBytes);
        this.#state = cacheCore.chunkRead(this.#state, r.cacheKey, r.cold);
        this.#deps.metrics?.hits.inc();
        return { start: r.position, bytes, end: r.span.end, cacheKey: r.cacheKey };
      } catch (error) {
        if (!(error instanceof DiskError && error.code === "not_found")) throw error;
        this.#state = cacheCore.chunkForgotten(this.#state, { key: r.cacheKey });
        this.#files.forget(r.cacheKey);
        return await this.#readMissed(r.firstRangeEnd === null ? r : { ...r, firstRangeEnd: null });
      }
    }
    return await this.#readMissed(r);
  }

  /**
   * A chunk file shorter than its chunk is corrupt: it leaves the accounting and the disk, so the
   * next read fetches it again. A reader that finds it gone already (another reader of the same
   * file dropped it) leaves the work to that one.
   */
  async #dropShortFile(cacheKey: string, error: ChunkFileShortError): Promise<void> {
    if (!cacheCore.isCached(this.#state, cacheKey)) return;
    this.#deps.metrics?.corruptChunkFiles.inc();
    this.#deps.logger.warn("cache dropped a chunk file shorter than its chunk", { key: cacheKey, error });
    this.#state = cacheCore.chunkForgotten(this.#state, { key: cacheKey });
    await this.#files.delete(cacheKey).catch((failure) => {
      rethrowBug(failure, this.#deps.logger, "deleting a chunk file threw; the read stops");
      this.#deps.logger.warn("cache could not delete a chunk file shorter than its chunk", {
        key: cacheKey,
        error: failure,
      });
    });
  }

  async #readMissed(r: ChunkRead): Promise<RemoteChunk> {
    const step = cacheCore.read(this.#state, r, this.#deps.clock.nowMs());
    this.#run(step);
    const wait = step.wait;
    if (wait.kind === "refused") {
      if (wait.noRoom) {
        this.#deps.metrics?.reservationRefusals.inc();
        this.#deps.metrics?.transientReplies.inc();
      }
      throw new CacheFullError(wait.bytes);
    }
    if (wait.kind === "first_range") {
      const firstRange = this.#firstRanges.get(r.cacheKey);
      assert(firstRange !== undefined, "a first range the core has in flight is being fetched");
      const bytes = await this.#waitForPoll(firstRange);
      return { start: wait.start, bytes, end: r.span.end, cacheKey: r.cacheKey };
    }
    const fetching = this.#chunkFetches.get(r.cacheKey);
    assert(fetching !== undefined, "a chunk fetch the core has in flight is being fetched");
    await this.#waitForPoll(fetching);
    // A trim right after the download can take the file away again: the read is then retried by
    // the log (a vanished file is a retryable `not_found`).
    const bytes = await this.#files.readWindow(r.cacheKey, r.span, r.position, wait.windowBytes);
    return { start: r.position, bytes, end: r.span.end, cacheKey: r.cacheKey };
  }

  /**
   * Readahead: starts fetching a chunk nobody waits for, when the core finds it neither cached nor
   * in flight and the cache has room below its low watermark; otherwise does nothing.
   */
  prefetch(chunk: ChunkRef): void {
    this.#run(cacheCore.prefetch(this.#state, chunk));
  }

  /**
   * Readahead of chunks known now or once `chunks` resolves (the next segments' indexes loaded):
   * each is prefetched as `prefetch` says. The wait is background work `idle` waits for; a failure
   * to learn the chunks (an index gone) only means no readahead.
   */
  prefetchAll(chunks: readonly ChunkRef[] | Promise<readonly ChunkRef[]>): void {
    if (!(chunks instanceof Promise)) {
      for (const chunk of chunks) this.prefetch(chunk);
      return;
    }
    this.#inBackground(chunks.then(
      (known) => this.prefetchAll(known),
      (error) => {
        rethrowBug(error, this.#deps.logger, "finding the chunks to read ahead threw; the process stops");
        this.#deps.logger.debug("readahead found no chunks to fetch", { error });
      },
    ));
  }

  /** A whole small object (a segment's `.index`), not cached here: its owner stores it. */
  fetchIndex(objectKey: string, sizeBytes: number): Promise<Uint8Array> {
    return this.#fetcher.fetchRange(objectKey, 0, sizeBytes, "index");
  }

  /** Drops a chunk whose bytes failed their checksum, so the next read fetches it again. */
  async drop(cacheKey: string): Promise<void> {
    this.#deps.metrics?.checksumFailures.inc();
    this.#state = cacheCore.chunkForgotten(this.#state, { key: cacheKey });
    await this.#files.delete(cacheKey).catch((error) => {
      rethrowBug(error, this.#deps.logger, "deleting a chunk file threw; the read stops");
      this.#deps.logger.warn("cache could not delete a chunk that failed its checksum", {
        key: cacheKey,
        error,
      });
    });
  }

  /** Takes back a window `read` returned, once nothing reads it (a no-op for other bytes). */
  recycleWindow(bytes: Uint8Array): void {
    this.#files.recycleWindow(bytes);
  }

  /**
   * Resolves once no chunk fetch, first range, chunk deletion or access-table save is in flight,
   * whatever their outcomes, waiting in turn for the work those start (a first range's hydration):
   * a caller, such as a test, then sees what that work left.
   */
  async idle(): Promise<void> {
    for (let rounds = 0; rounds < idleRoundsMax; rounds++) {
      const inFlight = [...this.#chunkFetches.values(), ...this.#firstRanges.values(), ...this.#background];
      if (inFlight.length === 0) return;
      await Promise.allSettled(inFlight);
    }
    throw new Error(`Cannot wait for the cache to be idle: work still started after ${idleRoundsMax} rounds`);
  }

  /** From the tick: a trim when the cache is over its watermark and the interval has passed. */
  onTick(nowMs: number): void {
    this.#run(cacheCore.tick(this.#state, nowMs));
  }

  /** Takes the core's new state and runs its effects in order. */
  #run(step: cacheCore.CacheStep): void {
    this.#state = step.state;
    for (const effect of step.effects) {
      switch (effect.kind) {
        case "delete_chunk":
          this.#deps.metrics?.evictions.inc();
          this.#inBackground(
            this.#files.delete(effect.key).catch((error) => {
              rethrowBug(error, this.#deps.logger, "a cache trim threw; the process stops");
              this.#deps.logger.warn("cache trim could not delete a chunk", { key: effect.key, error });
            }),
          );
          break;
        case "fetch_chunk":
          this.#startChunkFetch(effect.chunk, effect.why);
          break;
        case "fetch_first_range":
          this.#startFirstRange(effect.chunk, effect.cold, effect.start, effect.end);
          break;
        case "save_access_order":
          this.#inBackground(
            this.save().catch((error) => {
              rethrowBug(error, this.#deps.logger, "saving the cache access table threw; the process stops");
              this.#deps.logger.warn("cache access table not saved", { error });
            }),
          );
          break;
      }
    }
  }

  /** Keeps `work`, which never rejects, among the background work `idle` waits for while it runs. */
  #inBackground(work: Promise<void>): void {
    this.#background.add(work);
    void work.finally(() => this.#background.delete(work));
  }

  #startChunkFetch(chunk: ChunkRef, why: cacheCore.FetchReason): void {
    if (why === "miss") this.#deps.metrics?.misses.inc();
    else this.#deps.metrics?.hydrations.inc({ kind: why });
    const fetching = this.#fetchChunk(chunk);
    // The fetch is shared: a poll that gives up must not leave an unhandled rejection behind; the
    // polls that wait for it hear of its failure.
    if (why === "miss") fetching.catch(() => {});
    else {
      fetching.catch((error) => {
        rethrowBug(error, this.#deps.logger, "a background chunk fetch threw; the process stops");
        this.#deps.logger.debug("background chunk fetch failed", { key: chunk.cacheKey, error });
      });
    }
    this.#chunkFetches.set(chunk.cacheKey, fetching);
  }

  /** Fetches a chunk whose space the core reserved into its file, and reports how it ended. */
  async #fetchChunk(chunk: ChunkRef): Promise<void> {
    const key = chunk.cacheKey;
    try {
      using _admission = await this.#fetcher.admit(chunk.span.end - chunk.span.start);
      const sizeBytes = await this.#files.fill(
        key,
        chunk.span.end - chunk.span.start,
        (write) => this.#fetcher.streamChunk(chunk.objectKey, chunk.span, write),
      );
      this.#state = cacheCore.chunkFetched(this.#state, { key, sizeBytes });
      this.#deps.metrics?.fetchedBytes.inc(sizeBytes);
    } catch (error) {
      this.#state = cacheCore.chunkFetchFailed(this.#state, { key });
      throw error;
    } finally {
      // In step with the core: an entry here exactly while the core has the fetch in flight.
      this.#chunkFetches.delete(key);
    }
  }

  #startFirstRange(chunk: ChunkRef, cold: boolean, start: number, end: number): void {
    const bytes = this.#fetcher.fetchRange(chunk.objectKey, start, end, "first").then((range) => {
      // A short answer is a short object: never walked as if a batch ran past a window.
      if (range.length !== end - start) {
        throw new ChunkObjectShortError(chunk.cacheKey, range.length, end - start);
      }
      return range;
    }).finally(() => {
      this.#firstRanges.delete(chunk.cacheKey);
      this.#run(cacheCore.firstRangeSettled(this.#state, { chunk, cold }, this.#deps.clock.nowMs()));
    });
    // Shared by the readers whose position it holds, which hear of its failure when they await it.
    bytes.catch(() => {});
    this.#firstRanges.set(chunk.cacheKey, bytes);
  }

  /** The poll waits at most `fetch_timeout`; the fetch goes on and fills the cache for the retry. */
  async #waitForPoll<T>(fetching: Promise<T>): Promise<T> {
    try {
      return await this.#waitAtMostFetchTimeout(fetching);
    } catch (error) {
      if (error instanceof FetchTimeoutError || error instanceof CacheFullError) {
        this.#deps.metrics?.transientReplies.inc();
      }
      throw error;
    }
  }

  #waitAtMostFetchTimeout<T>(fetching: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const cancel = this.#deps.clock.schedule(
        this.#deps.fetchTimeoutMs,
        () => reject(new FetchTimeoutError(this.#deps.fetchTimeoutMs)),
      );
      fetching.then((value) => {
        cancel();
        resolve(value);
      }, (error) => {
        cancel();
        reject(error);
      });
    });
  }
}

export interface RangeFetcherDeps {
  store: Pick<DeadlineObjectStore, "getRange" | "streamRange">;
  clock: Clock;
  /** Deadline of one fetch, retries included: it outlives the poll that started it. */
  fetchDeadlineMs: number;
  /** `fetch_concurrency`: fetches for polls hold their own permits, never the uploads'. */
  fetchSlots: Semaphore;
  /** `fetch_bandwidth`, this shard's share. */
  fetchBandwidth: TokenBucket;
  metrics?: CacheMetrics;
}

/** A fetch let in: it holds a `fetch_concurrency` permit until disposed. */
export type FetchAdmission = Disposable;

/** Which GET a duration is recorded for. */
type RangeKind = "first" | "index";

/**
 * Ranged GETs for a shard's reads of remote data: each admitted under a `fetch_concurrency`
 * permit and `fetch_bandwidth` tokens (uploads have their own), run under the fetch deadline, and
 * counted. A cold poll's first range and a segment's `.index` come whole into memory; a chunk is
 * streamed piece by piece to a writer.
 */
export class RangeFetcher {
  readonly #deps: RangeFetcherDeps;

  constructor(deps: RangeFetcherDeps) {
    this.#deps = deps;
  }

  /** Waits for a permit, then for the tokens of `bytes`. */
  async admit(bytes: number): Promise<FetchAdmission> {
    const permit = await this.#deps.fetchSlots.acquire();
    try {
      await this.#deps.fetchBandwidth.take(bytes);
    } catch (error) {
      permit[Symbol.dispose]();
      throw error;
    }
    return permit;
  }

  /** `[start, end)` of an object, whole: a cold poll's first range, or a segment's `.index`. */
  async fetchRange(objectKey: string, start: number, end: number, kind: RangeKind): Promise<Uint8Array> {
    using _admission = await this.admit(end - start);
    const metrics = this.#deps.metrics;
    metrics?.misses.inc();
    const startedMs = this.#deps.clock.nowMs();
    const pieces = await this.#deps.store.getRange(objectKey, start, end, {
      deadlineAtMs: startedMs + this.#deps.fetchDeadlineMs,
    });
    metrics?.fetchSeconds.observe({ kind }, (this.#deps.clock.nowMs() - startedMs) / 1000);
    const length = pieces.reduce((n, p) => n + p.length, 0);
    metrics?.fetchedBytes.inc(length);
    return concatBytes(pieces, length);
  }

  /**
   * A chunk's bytes, handed to `write` at their positions piece by piece as they arrive. Returns
   * how many. The caller holds the chunk's admission.
   */
  async streamChunk(objectKey: string, span: ChunkSpan, write: PieceSink): Promise<number> {
    const startedMs = this.#deps.clock.nowMs();
    const deadline = { deadlineAtMs: startedMs + this.#deps.fetchDeadlineMs };
    const sizeBytes = await this.#deps.store.streamRange(objectKey, span.start, span.end, write, deadline);
    this.#deps.metrics?.fetchSeconds.observe(
      { kind: "chunk" },
      (this.#deps.clock.nowMs() - startedMs) / 1000,
    );
    return sizeBytes;
  }
}
