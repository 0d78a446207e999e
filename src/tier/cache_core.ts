import { assert } from "../runtime/assert.ts";
import type { ChunkSpan } from "./chunk_layout.ts";
import {
  type CacheState,
  type ChunkFetch,
  freeRoom,
  insertChunk,
  recentRanks,
  roomBelowLowWatermark,
  trim,
} from "./cache_accounting.ts";

export {
  type CacheConfig,
  type CachedChunk,
  type CacheState,
  initialCache,
  recentRanks,
} from "./cache_accounting.ts";

/**
 * The chunk cache's decisions, as a pure core: one function per event, `(state, event, nowMs) →
 * {state, effects}`, effects as data that the shell (`chunk_cache.ts`) runs. The core owns every
 * fetch in flight by the chunk it is for: a chunk fetch holds its reservation under that name until
 * it lands or fails, and a cold poll's first-range fetch is shared by the readers whose position it
 * holds. The accounting under it (budget, LRU order, trims) is `cache_accounting.ts`. No I/O, no
 * timers: the shell fetches, writes the files and deletes the ones the effects name.
 */

/** Bound on fetches (chunk fetches and first-range fetches together) in flight per shard. */
export const fetchesInFlightMax = 64;

/** How often the tick saves the LRU order, so a restart keeps which chunks are warm. */
export const accessOrderSaveIntervalMs = 60_000;

/** A chunk of a remote object: the name the cache keeps it under, and where it lies in the object. */
export interface ChunkRef {
  objectKey: string;
  cacheKey: string;
  span: ChunkSpan;
}

/** What a poll asks of the cache: a window of one chunk, from a batch boundary. */
export interface ChunkRead extends ChunkRef {
  /** A backfill far behind the head: its chunks enter at the cold end and its hits do not promote. */
  cold: boolean;
  /** Where the window starts in the object: a batch boundary inside the span. */
  position: number;
  /** The most a window of the cached chunk holds (it never runs past the chunk's end). */
  windowBytes: number;
  /**
   * Where a cold poll's first range ends (a batch boundary): a poll that finds nothing cached or in
   * flight fetches `[position, firstRangeEnd)` alone and answers from it. Null: the whole chunk.
   */
  firstRangeEnd: number | null;
}

/** Why a chunk is fetched: a poll waits for it, a cold poll's range was served first, or readahead. */
export type FetchReason = "miss" | "hydration" | "readahead";

export type CacheEffect =
  /** Trimmed (or refused at open): close its handle and delete its file. */
  | { kind: "delete_chunk"; key: string; sizeBytes: number }
  /** Fetch the chunk into its file; the core holds its reservation until `chunkFetched` or `chunkFetchFailed`. */
  | { kind: "fetch_chunk"; chunk: ChunkRef; why: FetchReason }
  /** Fetch `[start, end)` of the chunk's object into memory; report `firstRangeSettled` when it settles. */
  | { kind: "fetch_first_range"; chunk: ChunkRef; cold: boolean; start: number; end: number }
  /** Save the LRU order (`accessOrder`). */
  | { kind: "save_access_order" };

export interface CacheStep {
  state: CacheState;
  effects: CacheEffect[];
}

/** What a read that found no cached chunk waits for. */
export type ReadWait =
  /** The chunk's fetch in flight, then a window of at most `windowBytes` of its file. */
  | { kind: "chunk"; windowBytes: number }
  /** The first range in flight for the chunk, whose bytes start at `start`. */
  | { kind: "first_range"; start: number }
  /** Nothing: the poll answers a transient error. `noRoom`: fetches in flight hold the whole budget. */
  | { kind: "refused"; bytes: number; noRoom: boolean };

export interface ReadStep extends CacheStep {
  wait: ReadWait;
}

/** Whether a read of the chunk is served from its file: the read path's first question. */
export function isCached(state: CacheState, key: string): boolean {
  return state.chunks.has(key);
}

/** Fetches in flight: chunk fetches and first-range fetches. */
export function fetchesInFlight(state: CacheState): number {
  return state.fetches.size + state.firstRanges.size;
}

/** Chunk keys, coldest first: the order the access table saves. */
export function accessOrder(state: CacheState): string[] {
  return [...state.chunks.values()].sort((a, b) => a.rank - b.rank).map((c) => c.key);
}

/**
 * The cache opens on what its directory holds: chunks the saved order ranks (coldest first) take
 * their places at the warm end in that order; chunks it does not know (written after the last save)
 * go first, at the cold end. What does not fit a budget smaller than before is deleted now. Trims
 * this forces count as made at time 0.
 */
export function opened(
  initial: CacheState,
  e: { files: ReadonlyMap<string, number>; savedOrder: readonly string[] },
): CacheStep {
  const known = e.savedOrder.filter((key) => e.files.has(key));
  const knownSet = new Set(known);
  const unknown = [...e.files.keys()].filter((key) => !knownSet.has(key));
  let state = initial;
  const effects: CacheEffect[] = [];
  const add = (key: string, cold: boolean) => {
    const sizeBytes = e.files.get(key)!;
    const room = freeRoom(state, sizeBytes, 0);
    effects.push(...room.deleted);
    state = room.state;
    if (room.admitted) state = insertChunk(state, key, sizeBytes, cold);
    else effects.push({ kind: "delete_chunk", key, sizeBytes });
  };
  for (const key of unknown) add(key, true);
  for (const key of known) add(key, false);
  return { state, effects };
}

/**
 * A poll found its chunk not cached (or its file gone). It waits for the chunk's fetch in flight;
 * else a cold poll with a first range shares the first range in flight that holds its position, or
 * starts one; else the chunk is fetched, with its space reserved first (a trim is forced when it
 * does not fit). A first range in flight that does not hold the position makes the poll wait for
 * the chunk, reading as much as its own first range would have held.
 */
export function read(state: CacheState, e: ChunkRead, nowMs: number): ReadStep {
  const { span, position } = e;
  assert(!state.chunks.has(e.cacheKey), "a read of a cached chunk reads its file");
  assert(
    position >= span.start && position < span.end && e.windowBytes > 0,
    "a read's window starts inside its chunk",
  );
  if (state.fetches.has(e.cacheKey)) {
    return { state, effects: [], wait: { kind: "chunk", windowBytes: e.windowBytes } };
  }
  if (e.firstRangeEnd === null) return fetchForRead(state, e, e.windowBytes, nowMs);
  assert(position < e.firstRangeEnd && e.firstRangeEnd <= span.end, "a first range lies inside its chunk");
  const shared = state.firstRanges.get(e.cacheKey);
  if (shared === undefined) return startFirstRange(state, e, e.firstRangeEnd);
  if (shared.start <= position && position < shared.end) {
    return { state, effects: [], wait: { kind: "first_range", start: shared.start } };
  }
  return fetchForRead(state, e, e.firstRangeEnd - position, nowMs);
}

function startFirstRange(state: CacheState, e: ChunkRead, end: number): ReadStep {
  if (fetchesInFlight(state) >= fetchesInFlightMax) {
    return { state, effects: [], wait: { kind: "refused", bytes: end - e.position, noRoom: false } };
  }
  const firstRanges = new Map(state.firstRanges).set(e.cacheKey, { start: e.position, end });
  return {
    state: { ...state, firstRanges },
    effects: [{ kind: "fetch_first_range", chunk: e, cold: e.cold, start: e.position, end }],
    wait: { kind: "first_range", start: e.position },
  };
}

function fetchForRead(state: CacheState, e: ChunkRead, windowBytes: number, nowMs: number): ReadStep {
  const bytes = e.span.end - e.span.start;
  // Only chunk fetches count against the bound on this path: a poll may wait for a whole chunk
  // while first ranges fill the rest of the bound.
  if (state.fetches.size >= fetchesInFlightMax) {
    return { state, effects: [], wait: { kind: "refused", bytes, noRoom: false } };
  }
  const room = freeRoom(state, bytes, nowMs);
  if (!room.admitted) {
    return { state: room.state, effects: room.deleted, wait: { kind: "refused", bytes, noRoom: true } };
  }
  return {
    state: withFetch(room.state, { key: e.cacheKey, reservedBytes: bytes, cold: e.cold }),
    effects: [...room.deleted, { kind: "fetch_chunk", chunk: e, why: "miss" }],
    wait: { kind: "chunk", windowBytes },
  };
}

/**
 * A cold poll's first range settled (served or failed): the chunk under it hydrates in the
 * background, unless it is cached or fetched already or the bound is reached. It is being read, so
 * it may force a trim like any miss.
 */
export function firstRangeSettled(
  state: CacheState,
  e: { chunk: ChunkRef; cold: boolean },
  nowMs: number,
): CacheStep {
  const key = e.chunk.cacheKey;
  assert(state.firstRanges.has(key), "a settled first range was in flight");
  const firstRanges = new Map(state.firstRanges);
  firstRanges.delete(key);
  const settled = { ...state, firstRanges };
  if (settled.chunks.has(key) || settled.fetches.has(key) || fetchesInFlight(settled) >= fetchesInFlightMax) {
    return { state: settled, effects: [] };
  }
  const bytes = e.chunk.span.end - e.chunk.span.start;
  const room = freeRoom(settled, bytes, nowMs);
  if (!room.admitted) return { state: room.state, effects: room.deleted };
  return {
    state: withFetch(room.state, { key, reservedBytes: bytes, cold: e.cold }),
    effects: [...room.deleted, { kind: "fetch_chunk", chunk: e.chunk, why: "hydration" }],
  };
}

/**
 * Readahead: a chunk nobody waits for is fetched when it is not cached or in flight and the cache
 * stays at or under its low watermark with it. Speculative, so it never forces a trim and cannot
 * push out chunks readers use; it enters at the cold end, so a reader that stops leaves it first
 * in line to go. Refused, the state is returned as it was.
 */
export function prefetch(state: CacheState, chunk: ChunkRef): CacheStep {
  const key = chunk.cacheKey;
  if (state.chunks.has(key) || state.fetches.has(key) || fetchesInFlight(state) >= fetchesInFlightMax) {
    return { state, effects: [] };
  }
  const bytes = chunk.span.end - chunk.span.start;
  if (!roomBelowLowWatermark(state, bytes)) return { state, effects: [] };
  return {
    state: withFetch(state, { key, reservedBytes: bytes, cold: true }),
    effects: [{ kind: "fetch_chunk", chunk, why: "readahead" }],
  };
}

/** A chunk fetch landed: its reservation becomes the chunk, at the warm end or (cold) the cold end. */
export function chunkFetched(state: CacheState, e: { key: string; sizeBytes: number }): CacheState {
  const fetch = state.fetches.get(e.key);
  assert(fetch !== undefined, "a landed chunk fetch was in flight");
  return insertChunk(withoutFetch(state, fetch), e.key, e.sizeBytes, fetch.cold);
}

/** A chunk fetch failed: its reservation goes back. */
export function chunkFetchFailed(state: CacheState, e: { key: string }): CacheState {
  const fetch = state.fetches.get(e.key);
  assert(fetch !== undefined, "a failed chunk fetch was in flight");
  return withoutFetch(state, fetch);
}

/**
 * A read of the cached chunk: it moves to the warm end, unless the reader is cold or the chunk is
 * already among the warmest (`recentRanks`); then the state is returned as it was, with nothing
 * allocated (this runs on every warm poll).
 */
export function chunkRead(state: CacheState, key: string, cold: boolean): CacheState {
  const chunk = state.chunks.get(key);
  if (chunk === undefined || cold) return state;
  // Each rank handed out since this chunk's moved at most one chunk above it.
  if (state.warmRank - chunk.rank <= recentRanks(state)) return state;
  const chunks = new Map(state.chunks);
  chunks.set(key, { ...chunk, rank: state.warmRank });
  return { ...state, chunks, warmRank: state.warmRank + 1 };
}

/** A chunk file found missing, or dropped for a failed checksum: it leaves the accounting. */
export function chunkForgotten(state: CacheState, e: { key: string }): CacheState {
  const chunk = state.chunks.get(e.key);
  if (chunk === undefined) return state;
  const chunks = new Map(state.chunks);
  chunks.delete(e.key);
  return { ...state, chunks, usedBytes: state.usedBytes - chunk.sizeBytes };
}

/**
 * The tick: a trim when the cache is over its low watermark and `trim_min_interval` has passed,
 * and the LRU order saved every `accessOrderSaveIntervalMs`.
 */
export function tick(state: CacheState, nowMs: number): CacheStep {
  const trimmed = trim(state, nowMs, false, 0);
  if (nowMs - trimmed.state.lastSaveMs < accessOrderSaveIntervalMs) {
    return { state: trimmed.state, effects: trimmed.deleted };
  }
  return {
    state: { ...trimmed.state, lastSaveMs: nowMs },
    effects: [...trimmed.deleted, { kind: "save_access_order" }],
  };
}

function withFetch(state: CacheState, fetch: ChunkFetch): CacheState {
  assert(!state.fetches.has(fetch.key), "one fetch per chunk at a time");
  const fetches = new Map(state.fetches).set(fetch.key, fetch);
  return { ...state, fetches, reservedBytes: state.reservedBytes + fetch.reservedBytes };
}

function withoutFetch(state: CacheState, fetch: ChunkFetch): CacheState {
  assert(state.reservedBytes >= fetch.reservedBytes, "released more than was reserved");
  const fetches = new Map(state.fetches);
  fetches.delete(fetch.key);
  return { ...state, fetches, reservedBytes: state.reservedBytes - fetch.reservedBytes };
}
