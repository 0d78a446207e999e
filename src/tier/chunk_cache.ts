import type { PieceGate } from "../runtime/piece_gate.ts";
import { concatBytes } from "../runtime/bytes.ts";
import { readExactlyInto } from "../log/scan_batches.ts";
import type { BufferPool } from "../runtime/buffer_pool.ts";
import type { Clock } from "../runtime/clock.ts";
import { type Disk, DiskError, type DiskFile } from "../runtime/disk.ts";
import type { Logger } from "../runtime/logger.ts";
import { yieldToReactor } from "../runtime/yield_to_reactor.ts";
import type { RetryingObjectStore } from "../objectstore/retrying_object_store.ts";
import * as cacheCore from "./cache_core.ts";
import { readRecordFile, writeRecordFile } from "../log/record_file.ts";
import type { ChunkSpan } from "./chunk_layout.ts";
import { assert } from "../runtime/assert.ts";
import { type Cooperation, cooperative } from "../runtime/cooperation.ts";
import type { Semaphore } from "../runtime/semaphore.ts";
import type { TokenBucket } from "../runtime/token_bucket.ts";
import type { CacheMetrics } from "./cache_metrics.ts";
import { ChunkFileHandles } from "./chunk_file_handles.ts";

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
  store: RetryingObjectStore;
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
  /** The benchmark's switch: in its naive phase fetches skip the slots and fill a chunk without yields. */
  cooperation?: Cooperation;
  /** The shard's piece gate: each piece written into a chunk file waits for its turn (else a yield). */
  gate?: PieceGate;
  /** Buffers for the windows polls read, given back through `recycleWindow` once answered. */
  windowPool?: BufferPool;
}

/** The LRU order, saved so a restart keeps which chunks are warm. */
interface AccessTable {
  version: 1;
  /** Chunk keys, coldest first. */
  order: string[];
}

const accessTableFile = "access-table.bin";
const accessTableMagic = "STRACACH";
const accessTableSaveIntervalMs = 60_000;

/** Bound on chunk fetches (hydrations and first-range fetches together) in flight per shard. */
const fetchesInFlightMax = 64;

/** What a read asks of the cache. */
export interface ChunkRequest {
  objectKey: string;
  cacheKey: string;
  span: ChunkSpan;
  /** A backfill far behind the head: its chunks enter at the cold end and its hits do not promote. */
  cold: boolean;
}

/** Bytes of a `.log` from `start`: a whole chunk, or the first range of a cold poll. */
export interface FetchedRange {
  start: number;
  bytes: Uint8Array;
}

interface FirstFetch {
  start: number;
  end: number;
  bytes: Promise<Uint8Array>;
}

/**
 * A shard's chunk cache (RFC § "Chunk cache"): chunks of remote `.log` objects as files under the
 * shard's cache directory. A miss reserves space first, issues one ranged GET, writes a `.part`
 * file piece by piece with yields, fsyncs it and renames it into place; concurrent readers of one
 * chunk share that fetch. The accounting (budget, LRU, trims) is the pure `cache_core`.
 */
export class ChunkCache {
  readonly #deps: ChunkCacheDeps;
  #state: cacheCore.CacheState;
  /** Chunk downloads in flight; a reader waits for one, then reads its window from the file. */
  readonly #inFlight = new Map<string, Promise<void>>();
  /** Cold polls' first-range fetches, by chunk: concurrent cold readers of one range share one. */
  readonly #firstFetches = new Map<string, FirstFetch>();
  /** Object requests made, for tests and gauges. */
  fetches = 0;
  hits = 0;
  #saving: Promise<void> = Promise.resolve();
  #lastSaveMs = 0;
  /** Chunk files kept open for window reads; each is forgotten when its chunk leaves the cache. */
  readonly #handles: ChunkFileHandles;

  private constructor(deps: ChunkCacheDeps, state: cacheCore.CacheState) {
    this.#deps = deps;
    this.#state = state;
    this.#handles = new ChunkFileHandles(deps.disk);
    deps.metrics?.addSource(this);
  }

  /**
   * Opens the cache: walks its directory, deletes `.part` leftovers of interrupted fetches, and
   * accounts every chunk already there, so a restart keeps the cache.
   */
  static async open(deps: ChunkCacheDeps): Promise<ChunkCache> {
    await deps.disk.mkdirp(deps.dir);
    const files = new Map<string, number>();
    const walk = async (relative: string): Promise<void> => {
      const dir = relative === "" ? deps.dir : `${deps.dir}/${relative}`;
      for (const name of await deps.disk.list(dir)) {
        const child = relative === "" ? name : `${relative}/${name}`;
        if (relative === "" && name.startsWith(accessTableFile)) continue;
        const stat = await deps.disk.stat(`${deps.dir}/${child}`);
        if (stat?.isDirectory) await walk(child);
        else if (name.endsWith(".part")) await deps.disk.unlink(`${deps.dir}/${child}`);
        else if (stat?.isFile) files.set(child, stat.sizeBytes);
      }
    };
    await walk("");
    // The saved order ranks the chunks it knows, coldest first; files it does not know (written
    // after the last save) join at the cold end.
    const saved = await readRecordFile<AccessTable>(
      deps.disk,
      `${deps.dir}/${accessTableFile}`,
      accessTableMagic,
    )
      .catch((error) => {
        deps.logger.warn("cache access table unreadable; chunks are ranked cold", { error });
        return null;
      });
    const known = (saved?.order ?? []).filter((key) => files.has(key));
    const unknown = [...files.keys()].filter((key) => !known.includes(key));
    let state = cacheCore.initialCache(deps.config);
    const doomed: string[] = [];
    const add = (key: string, cold: boolean) => {
      const size = files.get(key)!;
      const r = cacheCore.reserve(state, size, 0);
      doomed.push(...r.effects.map((e) => e.key));
      if (!r.admitted) {
        doomed.push(key);
        return;
      }
      state = cacheCore.commit(r.state, { key, reservedBytes: size, sizeBytes: size, cold });
    };
    for (const key of unknown) add(key, true);
    for (const key of known) add(key, false);
    // A smaller budget than before: what does not fit goes now, file and all.
    for (const key of doomed) await deps.disk.unlink(`${deps.dir}/${key}`).catch(() => {});
    return new ChunkCache(deps, state);
  }

  /** Saves the LRU order (every `accessTableSaveIntervalMs` from the tick, and at shutdown). */
  save(): Promise<void> {
    const order = [...this.#state.chunks.values()].sort((a, b) => a.rank - b.rank).map((c) => c.key);
    this.#saving = this.#saving.catch(() => {}).then(() =>
      writeRecordFile(
        this.#deps.disk,
        this.#deps.dir,
        accessTableFile,
        accessTableMagic,
        { version: 1, order } satisfies AccessTable,
      )
    );
    return this.#saving;
  }

  /** Saves the access table and closes the chunk files held open; called at shutdown. */
  async close(): Promise<void> {
    this.#handles.closeAll();
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

  /** Whether a chunk is cached or being fetched: a read of it makes no new request. */
  isWarm(cacheKey: string): boolean {
    return this.#state.chunks.has(cacheKey) || this.#inFlight.has(cacheKey);
  }

  /**
   * A cold poll (RFC § "Chunk cache"): fetches exactly the walk's range `[first.start, first.end)`
   * (64 KiB to 1 MiB, ending on a batch boundary) and answers from it, then hydrates the whole
   * chunk in the background. Readers arriving meanwhile share the first fetch when it covers
   * their position, else wait for the chunk.
   */
  async readFirst(request: ChunkRequest, first: { start: number; end: number }): Promise<FetchedRange> {
    const { span, cacheKey } = request;
    assert(
      span.start <= first.start && first.start < first.end && first.end <= span.end,
      "first range in chunk",
    );
    const shared = this.#firstFetches.get(cacheKey);
    if (
      this.isWarm(cacheKey) ||
      (shared !== undefined && !(shared.start <= first.start && first.start < shared.end))
    ) {
      const window = { from: first.start, length: first.end - first.start };
      return {
        start: first.start,
        bytes: await this.readChunk(request.objectKey, cacheKey, span, request.cold, window),
      };
    }
    let fetch = shared;
    if (fetch === undefined) {
      if (this.#inFlight.size + this.#firstFetches.size >= fetchesInFlightMax) {
        throw new CacheFullError(first.end - first.start);
      }
      const bytes = this.#fetchRange(request.objectKey, first.start, first.end, "first").finally(() => {
        this.#firstFetches.delete(cacheKey);
        this.#hydrate(request, "hydration");
      });
      bytes.catch(() => {});
      fetch = { ...first, bytes };
      this.#firstFetches.set(cacheKey, fetch);
    }
    return { start: fetch.start, bytes: await this.#waitForPoll(fetch.bytes) };
  }

  /**
   * Readahead and background hydration: starts fetching a chunk nobody waits for, when it is not
   * cached or in flight and the cache has room below its low watermark; otherwise does nothing.
   */
  prefetch(request: ChunkRequest): void {
    this.#hydrate(request, "readahead");
  }

  #hydrate(request: ChunkRequest, why: "hydration" | "readahead"): void {
    const { cacheKey, span } = request;
    if (this.isWarm(cacheKey) || this.#inFlight.size + this.#firstFetches.size >= fetchesInFlightMax) return;
    const bytes = span.end - span.start;
    // The chunk under a cold poll is being read: it may force a trim like any miss. Readahead is
    // speculative: only into room below the low watermark, never pushing anything out.
    if (why === "hydration") {
      const reserved = cacheCore.reserve(this.#state, bytes, this.#deps.clock.nowMs());
      this.#apply(reserved);
      if (!reserved.admitted) return;
    } else {
      const room = cacheCore.reserveIfRoom(this.#state, bytes);
      if (!room.admitted) return;
      this.#state = room.state;
    }
    this.#deps.metrics?.hydrations.inc({ kind: why });
    const path = `${this.#deps.dir}/${cacheKey}`;
    // Prefetched chunks enter at the cold end: a reader that stops leaves them first in line to go.
    const cold = why === "readahead" || request.cold;
    const fetching = this.#download(request.objectKey, cacheKey, path, span, cold).finally(() =>
      this.#inFlight.delete(cacheKey)
    );
    fetching.catch((error) =>
      this.#deps.logger.debug("background chunk fetch failed", { key: cacheKey, error })
    );
    this.#inFlight.set(cacheKey, fetching);
  }

  /**
   * Bytes of one chunk of an object, from the cache, or fetched once and cached: the whole chunk,
   * or only `window` (a poll reads what it needs from the chunk file, never the whole chunk).
   */
  async readChunk(
    objectKey: string,
    cacheKey: string,
    span: ChunkSpan,
    cold: boolean,
    window: { from: number; length: number } = { from: span.start, length: span.end - span.start },
  ): Promise<Uint8Array> {
    assert(
      window.from >= span.start && window.from < span.end && window.length > 0,
      "window inside the chunk",
    );
    const path = `${this.#deps.dir}/${cacheKey}`;
    if (this.#state.chunks.has(cacheKey)) {
      try {
        const bytes = await this.#readWindow(path, span, window);
        this.#state = cacheCore.access(this.#state, cacheKey, cold);
        this.hits++;
        this.#deps.metrics?.hits.inc();
        return bytes;
      } catch (error) {
        if (!(error instanceof DiskError && error.code === "not_found")) throw error;
        this.#forget(cacheKey);
      }
    }
    let fetching = this.#inFlight.get(cacheKey);
    if (fetching === undefined) {
      if (this.#inFlight.size >= fetchesInFlightMax) throw new CacheFullError(span.end - span.start);
      fetching = this.#fetch(objectKey, cacheKey, path, span, cold).finally(() =>
        this.#inFlight.delete(cacheKey)
      );
      // A poll that gives up must not leave an unhandled rejection behind: the fetch is shared.
      fetching.catch(() => {});
      this.#inFlight.set(cacheKey, fetching);
    }
    await this.#waitForPoll(fetching);
    // A trim right after the download can take the file away again: the read is then retried by
    // the log (a vanished file is a retryable `not_found`).
    return await this.#readWindow(path, span, window);
  }

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

  /** The poll waits at most `fetch_timeout`; the fetch goes on and fills the cache for the retry. */
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

  /** Drops a chunk whose bytes failed their checksum, so the next read fetches it again. */
  async drop(cacheKey: string): Promise<void> {
    this.#deps.metrics?.checksumFailures.inc();
    this.#forget(cacheKey);
    await this.#deps.disk.unlink(`${this.#deps.dir}/${cacheKey}`).catch(() => {});
  }

  /** From the tick: a trim when the cache is over its watermark and the interval has passed. */
  onTick(nowMs: number): void {
    this.#apply(cacheCore.trim(this.#state, nowMs));
    if (nowMs - this.#lastSaveMs >= accessTableSaveIntervalMs) {
      this.#lastSaveMs = nowMs;
      this.save().catch((error) => this.#deps.logger.warn("cache access table not saved", { error }));
    }
  }

  async #fetch(
    objectKey: string,
    cacheKey: string,
    path: string,
    span: ChunkSpan,
    cold: boolean,
  ): Promise<void> {
    const bytes = span.end - span.start;
    const reserved = cacheCore.reserve(this.#state, bytes, this.#deps.clock.nowMs());
    this.#apply(reserved);
    if (!reserved.admitted) {
      this.#deps.metrics?.reservationRefusals.inc();
      throw new CacheFullError(bytes);
    }
    this.#deps.metrics?.misses.inc();
    await this.#download(objectKey, cacheKey, path, span, cold);
  }

  /** A whole small object (a segment's `.index`), not cached here: its owner stores it. */
  fetchObject(objectKey: string, sizeBytes: number): Promise<Uint8Array> {
    return this.#fetchRange(objectKey, 0, sizeBytes, "index");
  }

  /** Ranged GET of `[start, end)` for a poll, not cached: a cold poll's first range, or an index. */
  async #fetchRange(
    objectKey: string,
    start: number,
    end: number,
    kind: "first" | "index",
  ): Promise<Uint8Array> {
    using _slot = (this.#deps.cooperation ?? cooperative).naive
      ? null
      : await this.#deps.fetchSlots.acquire();
    await this.#deps.fetchBandwidth.take(end - start);
    this.fetches++;
    this.#deps.metrics?.misses.inc();
    const startedMs = this.#deps.clock.nowMs();
    const pieces = await this.#deps.store.getRange(objectKey, start, end, {
      deadlineAtMs: startedMs + this.#deps.fetchDeadlineMs,
    });
    this.#deps.metrics?.fetchSeconds.observe({ kind }, (this.#deps.clock.nowMs() - startedMs) / 1000);
    const length = pieces.reduce((n, p) => n + p.length, 0);
    this.#deps.metrics?.fetchedBytes.inc(length);
    return concatBytes(pieces, length);
  }

  /** Downloads a chunk whose space is reserved into its file, and accounts it. */
  async #download(
    objectKey: string,
    cacheKey: string,
    path: string,
    span: ChunkSpan,
    cold: boolean,
  ): Promise<void> {
    const bytes = span.end - span.start;
    const naive = (this.#deps.cooperation ?? cooperative).naive;
    try {
      using _slot = naive ? null : await this.#deps.fetchSlots.acquire();
      await this.#deps.fetchBandwidth.take(bytes);
      this.fetches++;
      const dir = path.slice(0, path.lastIndexOf("/"));
      await this.#deps.disk.mkdirp(dir);
      // Around the page cache: filling fresh page-cache pages cost the write worker a third of a core in a
      // storm, and the chunk cache is itself the cache of these bytes (docs/TUNING.md, item 35).
      const part = await this.#deps.disk.open(`${path}.part`, { create: true, bypassCache: true });
      let at = 0;
      try {
        await part.truncate(0);
        const startedMs = this.#deps.clock.nowMs();
        const deadline = { deadlineAtMs: startedMs + this.#deps.fetchDeadlineMs };
        if (naive) {
          const pieces = await this.#deps.store.getRange(objectKey, span.start, span.end, deadline);
          const whole = concatBytes(pieces, pieces.reduce((n, p) => n + p.length, 0));
          await part.writeAt(whole, 0);
          at = whole.length;
        } else {
          // Each piece goes to the file as it arrives: the chunk is never whole in memory, and the
          // store may read the next piece into the same buffer once this one is written.
          at = await this.#deps.store.streamRange(
            objectKey,
            span.start,
            span.end,
            (piece, position) => this.#writePiece(part, piece, position),
            deadline,
          );
          // A retried attempt wrote from position 0 again; nothing of an earlier one lies past its end.
          await part.truncate(at);
        }
        this.#deps.metrics?.fetchSeconds.observe(
          { kind: "chunk" },
          (this.#deps.clock.nowMs() - startedMs) / 1000,
        );
        await part.sync();
      } finally {
        await part.close();
      }
      await this.#deps.disk.rename(`${path}.part`, path);
      await this.#deps.disk.fsyncDir(dir);
      this.#state = cacheCore.commit(this.#state, {
        key: cacheKey,
        reservedBytes: bytes,
        sizeBytes: at,
        cold,
      });
      this.#deps.metrics?.fetchedBytes.inc(at);
    } catch (error) {
      if (this.#state.reservedBytes >= bytes && !this.#state.chunks.has(cacheKey)) {
        this.#state = cacheCore.releaseReservation(this.#state, bytes);
      }
      throw error;
    }
  }

  /**
   * One piece of a chunk fill into its `.part` file. A write's copy into the page cache runs on the
   * loop thread in some runtimes (Deno's node:fs), about 0.8 ms per MiB: it is a piece of work like
   * a checksum, and takes the gate's turn.
   */
  async #writePiece(part: DiskFile, piece: Uint8Array, position: number): Promise<void> {
    const gate = this.#deps.gate;
    if (gate !== undefined) await gate.turn();
    await part.writeAt(piece, position);
    if (gate === undefined) await yieldToReactor();
  }

  /** Takes back a window `readChunk` returned, once nothing reads it (a no-op for other bytes). */
  recycleWindow(bytes: Uint8Array): void {
    this.#deps.windowPool?.give(bytes);
  }

  async #readWindow(
    path: string,
    span: ChunkSpan,
    window: { from: number; length: number },
  ): Promise<Uint8Array> {
    return await this.#handles.read(path, async (file) => {
      const length = Math.min(window.length, span.end - window.from);
      const buffer = this.#deps.windowPool?.take(length) ?? new Uint8Array(length);
      return buffer.subarray(0, await readExactlyInto(file, buffer, window.from - span.start));
    });
  }

  /** A chunk leaves the accounting, and its file handle with it (the caller deletes the file). */
  #forget(cacheKey: string): void {
    this.#state = cacheCore.forget(this.#state, cacheKey);
    this.#handles.forget(`${this.#deps.dir}/${cacheKey}`);
  }

  #apply(step: cacheCore.CacheStep): void {
    this.#state = step.state;
    this.#deps.metrics?.evictions.inc(step.effects.length);
    for (const effect of step.effects) {
      this.#handles.forget(`${this.#deps.dir}/${effect.key}`);
      this.#deps.disk.unlink(`${this.#deps.dir}/${effect.key}`).catch((error) =>
        this.#deps.logger.warn("cache trim could not delete a chunk", { key: effect.key, error })
      );
    }
  }
}
