import { assert } from "../../runtime/assert.ts";
import type { ChunkSpan } from "./chunk_layout.ts";

/**
 * The chunk cache's state and its accounting, pure: the budget (bytes and objects), the space
 * chunk fetches reserve before they start, the LRU order by access with cold readers' chunks at
 * the cold end, and trims down to the low watermark at most once per `trim_min_interval` unless
 * forced. The events that change it follow, below.
 */
export interface CacheConfig {
  /** The smaller of `size` and `size_percent` of the data disk. */
  budgetBytes: number;
  objectsMax: number;
  lowWatermarkPercent: number;
  trimMinIntervalMs: number;
}

export interface CachedChunk {
  key: string;
  sizeBytes: number;
  /** LRU order: lower is evicted first. Access moves a chunk to the warm end. */
  rank: number;
}

/** A chunk fetch in flight, named by the chunk it fills: it holds its reservation until it lands or fails. */
export interface ChunkFetch {
  key: string;
  reservedBytes: number;
  /** The chunk enters the LRU at the cold end when it lands. */
  cold: boolean;
}

/** A cold poll's first-range fetch in flight: bytes `[start, end)` of the chunk's object, not cached. */
export interface FirstRangeFetch {
  start: number;
  end: number;
}

export interface CacheState {
  config: CacheConfig;
  chunks: ReadonlyMap<string, CachedChunk>;
  usedBytes: number;
  /** Chunk fetches in flight by chunk key, at most one per chunk. */
  fetches: ReadonlyMap<string, ChunkFetch>;
  /** The sum of the fetches' reservations. */
  reservedBytes: number;
  /** First-range fetches in flight by chunk key, at most one per chunk. */
  firstRanges: ReadonlyMap<string, FirstRangeFetch>;
  lastTrimMs: number;
  /** When the LRU order was last saved (clock ms). */
  lastSaveMs: number;
  /** Next rank at the warm end, and below the coldest at the cold end. */
  warmRank: number;
  coldRank: number;
}

/** Chunks a trim deletes: the shell closes their handles and deletes their files. */
export interface DeletedChunk {
  kind: "delete_chunk";
  key: string;
  sizeBytes: number;
}

export function initialCache(config: CacheConfig): CacheState {
  assert(config.budgetBytes > 0 && config.objectsMax > 0, "a cache needs a positive budget and object cap");
  assert(
    config.lowWatermarkPercent > 0 && config.lowWatermarkPercent < 100,
    "the low watermark is a percentage below 100",
  );
  return {
    config,
    chunks: new Map(),
    usedBytes: 0,
    fetches: new Map(),
    reservedBytes: 0,
    firstRanges: new Map(),
    lastTrimMs: -Infinity,
    lastSaveMs: 0,
    warmRank: 1,
    coldRank: 0,
  };
}

/**
 * Room for `bytes` more in one more object. When it does not fit, a trim is forced that frees room
 * for it; only when even that cannot make room (fetches in flight hold the space) is it not
 * admitted, and the poll answers a transient 503. Nothing is reserved here.
 */
export function freeRoom(
  state: CacheState,
  bytes: number,
  nowMs: number,
): { state: CacheState; deleted: DeletedChunk[]; admitted: boolean } {
  if (fits(state, bytes)) return { state, deleted: [], admitted: true };
  const trimmed = trim(state, nowMs, true, bytes);
  return { ...trimmed, admitted: fits(trimmed.state, bytes) };
}

/**
 * Whether `bytes` more in one more object leave the cache at or under its low watermark: the only
 * room a speculative fetch may take.
 */
export function roomBelowLowWatermark(state: CacheState, bytes: number): boolean {
  const c = state.config;
  return state.usedBytes + state.reservedBytes + bytes <= (c.budgetBytes * c.lowWatermarkPercent) / 100 &&
    state.chunks.size + state.fetches.size + 1 <= Math.floor((c.objectsMax * c.lowWatermarkPercent) / 100);
}

function fits(state: CacheState, bytes: number): boolean {
  return state.usedBytes + state.reservedBytes + bytes <= state.config.budgetBytes &&
    state.chunks.size + state.fetches.size < state.config.objectsMax;
}

/**
 * A chunk joins the LRU. A cold reader's chunk (a backfill far behind the head) enters at the cold
 * end, so it cannot push out the working set near the head.
 */
export function insertChunk(state: CacheState, key: string, sizeBytes: number, cold: boolean): CacheState {
  const chunks = new Map(state.chunks);
  const previous = chunks.get(key);
  const rank = cold ? state.coldRank : state.warmRank;
  chunks.set(key, { key, sizeBytes, rank });
  return {
    ...state,
    chunks,
    usedBytes: state.usedBytes - (previous?.sizeBytes ?? 0) + sizeBytes,
    warmRank: cold ? state.warmRank : state.warmRank + 1,
    coldRank: cold ? state.coldRank - 1 : state.coldRank,
  };
}

/**
 * How many places from the warm end a read leaves a chunk where it is: half of the chunks a trim to
 * the low watermark keeps, and at least 1 (the warmest chunk itself, where a move changes nothing).
 * Moving a chunk copies the whole map, and a reader walks a chunk in about 80 polls, so every poll
 * copied it for nothing (18 % of what the storm allocated, a sampling heap profile found). The
 * order is thus LRU up to `recentRanks` places at the warm end: such a chunk goes before one read
 * after it only when a trim keeps fewer chunks than that, which trimming chunks of one size to the
 * low watermark never does.
 */
export function recentRanks(state: CacheState): number {
  return Math.max(1, Math.floor((state.chunks.size * state.config.lowWatermarkPercent) / 200));
}

/**
 * Evicts least recently used chunks down to the low watermark (bytes and objects) when the cache
 * is over either, at most once per `trim_min_interval` unless `force`. A forced trim for a refused
 * reservation frees room for that request too (`neededBytes`): trimming only to the watermark
 * could leave it refused forever.
 */
export function trim(
  state: CacheState,
  nowMs: number,
  force: boolean,
  neededBytes: number,
): { state: CacheState; deleted: DeletedChunk[] } {
  const c = state.config;
  const lowBytes = Math.min((c.budgetBytes * c.lowWatermarkPercent) / 100, c.budgetBytes - neededBytes);
  const lowObjects = Math.min(
    Math.floor((c.objectsMax * c.lowWatermarkPercent) / 100),
    c.objectsMax - (neededBytes > 0 ? 1 : 0),
  );
  const reservations = state.fetches.size;
  const over = state.usedBytes + state.reservedBytes > lowBytes ||
    state.chunks.size + reservations > lowObjects;
  if (!over || (!force && nowMs - state.lastTrimMs < c.trimMinIntervalMs)) return { state, deleted: [] };
  const chunks = new Map(state.chunks);
  const deleted: DeletedChunk[] = [];
  let used = state.usedBytes;
  // Coldest first; the victims are bounded by the cache's own contents.
  for (const chunk of [...state.chunks.values()].sort((a, b) => a.rank - b.rank)) {
    if (used + state.reservedBytes <= lowBytes && chunks.size + reservations <= lowObjects) break;
    chunks.delete(chunk.key);
    used -= chunk.sizeBytes;
    deleted.push({ kind: "delete_chunk", key: chunk.key, sizeBytes: chunk.sizeBytes });
  }
  return { state: { ...state, chunks, usedBytes: used, lastTrimMs: nowMs }, deleted };
}

/**
 * The chunk cache's decisions, as a pure core: one function per event, `(state, event, nowMs) →
 * {state, effects}`, effects as data that the shell (`chunk_cache.ts`) runs. The core owns every
 * fetch in flight by the chunk it is for: a chunk fetch holds its reservation under that name until
 * it lands or fails, and a cold poll's first-range fetch is shared by the readers whose position it
 * holds. The accounting under it (budget, LRU order, trims) is above. No I/O, no
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
