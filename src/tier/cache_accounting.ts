import { assert } from "../runtime/assert.ts";

/**
 * The chunk cache's state and its accounting, pure: the budget (bytes and objects), the space
 * chunk fetches reserve before they start, the LRU order by access with cold readers' chunks at
 * the cold end, and trims down to the low watermark at most once per `trim_min_interval` unless
 * forced. The events that change it are `cache_core.ts`.
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
