import { assert } from "../runtime/assert.ts";

/**
 * The chunk cache's accounting, as a pure core (RFC § "Chunk cache"): the budget, reservations
 * made before a download, LRU order by access, cold readers' chunks entering at the cold end, and
 * trims down to the low watermark at most once per `trim_min_interval` unless forced. The shell
 * downloads, writes `.part` files, renames them and deletes the files the effects name.
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

export interface CacheState {
  config: CacheConfig;
  chunks: ReadonlyMap<string, CachedChunk>;
  usedBytes: number;
  reservedBytes: number;
  reservations: number;
  lastTrimMs: number;
  /** Next rank at the warm end, and below the coldest at the cold end. */
  warmRank: number;
  coldRank: number;
}

export type CacheEffect = { kind: "delete_chunk"; key: string; sizeBytes: number };

export interface CacheStep {
  state: CacheState;
  effects: CacheEffect[];
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
    reservedBytes: 0,
    reservations: 0,
    lastTrimMs: -Infinity,
    warmRank: 1,
    coldRank: 0,
  };
}

/**
 * Space for a download, reserved before it starts. When it does not fit, a trim is forced that
 * frees room for it; only when even that cannot make room (downloads in flight hold the space) is
 * the answer `full`, and the poll answers a transient 503.
 */
export function reserve(state: CacheState, bytes: number, nowMs: number): CacheStep & { admitted: boolean } {
  if (fits(state, bytes)) return { state: reserved(state, bytes), effects: [], admitted: true };
  const trimmed = trim(state, nowMs, true, bytes);
  if (fits(trimmed.state, bytes)) {
    return { state: reserved(trimmed.state, bytes), effects: trimmed.effects, admitted: true };
  }
  return { ...trimmed, admitted: false };
}

/**
 * Space for a prefetch (readahead, background hydration nobody waits for): admitted only when the
 * cache stays at or under its low watermark afterwards. It never forces a trim, so speculative
 * downloads cannot push out chunks that readers are using.
 */
export function reserveIfRoom(state: CacheState, bytes: number): { state: CacheState; admitted: boolean } {
  const c = state.config;
  const room =
    state.usedBytes + state.reservedBytes + bytes <= (c.budgetBytes * c.lowWatermarkPercent) / 100 &&
    state.chunks.size + state.reservations + 1 <= Math.floor((c.objectsMax * c.lowWatermarkPercent) / 100);
  return room ? { state: reserved(state, bytes), admitted: true } : { state, admitted: false };
}

function fits(state: CacheState, bytes: number): boolean {
  return state.usedBytes + state.reservedBytes + bytes <= state.config.budgetBytes &&
    state.chunks.size + state.reservations < state.config.objectsMax;
}

function reserved(state: CacheState, bytes: number): CacheState {
  return { ...state, reservedBytes: state.reservedBytes + bytes, reservations: state.reservations + 1 };
}

/** A download failed or was abandoned: its reservation goes back. */
export function releaseReservation(state: CacheState, bytes: number): CacheState {
  assert(state.reservedBytes >= bytes && state.reservations > 0, "released more than was reserved");
  return { ...state, reservedBytes: state.reservedBytes - bytes, reservations: state.reservations - 1 };
}

/**
 * A download landed: its reservation becomes a chunk. A cold reader's chunk (a backfill far
 * behind the head) enters at the cold end, so it cannot push out the working set near the head.
 */
export function commit(
  state: CacheState,
  e: { key: string; reservedBytes: number; sizeBytes: number; cold: boolean },
): CacheState {
  const released = releaseReservation(state, e.reservedBytes);
  const chunks = new Map(released.chunks);
  const previous = chunks.get(e.key);
  const rank = e.cold ? released.coldRank : released.warmRank;
  chunks.set(e.key, { key: e.key, sizeBytes: e.sizeBytes, rank });
  return {
    ...released,
    chunks,
    usedBytes: released.usedBytes - (previous?.sizeBytes ?? 0) + e.sizeBytes,
    warmRank: e.cold ? released.warmRank : released.warmRank + 1,
    coldRank: e.cold ? released.coldRank - 1 : released.coldRank,
  };
}

/**
 * A read hit the chunk: it moves to the warm end, unless the reader is cold (a backfill far behind
 * the head): its hits leave the chunk where it is, so a backfill never displaces the working set.
 * A chunk already among the warmest (`recentRanks`) stays where it is too: moving it copies the
 * whole map, and a reader walks a chunk in about 80 polls, so every poll copied it for nothing (18 %
 * of what the storm allocated, a sampling heap profile found). The order is thus LRU up to
 * `recentRanks` places at the warm end: such a chunk goes before one read after it only when a trim
 * keeps fewer chunks than that, which trimming chunks of one size to the low watermark never does.
 */
export function access(state: CacheState, key: string, cold = false): CacheState {
  const chunk = state.chunks.get(key);
  if (chunk === undefined || cold) return state;
  // Each rank handed out since this chunk's moved at most one chunk above it.
  if (state.warmRank - chunk.rank <= recentRanks(state)) return state;
  const chunks = new Map(state.chunks);
  chunks.set(key, { ...chunk, rank: state.warmRank });
  return { ...state, chunks, warmRank: state.warmRank + 1 };
}

/**
 * How many places from the warm end a read leaves a chunk where it is: half of the chunks a trim to
 * the low watermark keeps, and at least 1 (the warmest chunk itself, where a move changes nothing).
 */
export function recentRanks(state: CacheState): number {
  return Math.max(1, Math.floor((state.chunks.size * state.config.lowWatermarkPercent) / 200));
}

/** A chunk file found missing or dropped (a checksum failure): it leaves the accounting. */
export function forget(state: CacheState, key: string): CacheState {
  const chunk = state.chunks.get(key);
  if (chunk === undefined) return state;
  const chunks = new Map(state.chunks);
  chunks.delete(key);
  return { ...state, chunks, usedBytes: state.usedBytes - chunk.sizeBytes };
}

/**
 * Evicts least recently used chunks down to the low watermark (bytes and objects) when the cache
 * is over either, at most once per `trim_min_interval` unless `force`. A forced trim for a refused
 * reservation frees room for that request too (`neededBytes`): trimming only to the watermark
 * could leave it refused forever.
 */
export function trim(state: CacheState, nowMs: number, force = false, neededBytes = 0): CacheStep {
  const c = state.config;
  const lowBytes = Math.min((c.budgetBytes * c.lowWatermarkPercent) / 100, c.budgetBytes - neededBytes);
  const lowObjects = Math.min(
    Math.floor((c.objectsMax * c.lowWatermarkPercent) / 100),
    c.objectsMax - (neededBytes > 0 ? 1 : 0),
  );
  const over = state.usedBytes + state.reservedBytes > lowBytes ||
    state.chunks.size + state.reservations > lowObjects;
  if (!over || (!force && nowMs - state.lastTrimMs < c.trimMinIntervalMs)) return { state, effects: [] };
  const chunks = new Map(state.chunks);
  const effects: CacheEffect[] = [];
  let used = state.usedBytes;
  // Coldest first; the victims are bounded by the cache's own contents.
  for (const chunk of [...state.chunks.values()].sort((a, b) => a.rank - b.rank)) {
    if (used + state.reservedBytes <= lowBytes && chunks.size + state.reservations <= lowObjects) break;
    chunks.delete(chunk.key);
    used -= chunk.sizeBytes;
    effects.push({ kind: "delete_chunk", key: chunk.key, sizeBytes: chunk.sizeBytes });
  }
  return { state: { ...state, chunks, usedBytes: used, lastTrimMs: nowMs }, effects };
}
