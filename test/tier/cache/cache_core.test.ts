import t from "tap";
import {
  accessOrder,
  type CacheEffect,
  type CacheState,
  chunkFetched,
  chunkFetchFailed,
  chunkForgotten,
  type ChunkRead,
  chunkRead,
  type ChunkRef,
  fetchesInFlightMax,
  firstRangeSettled,
  initialCache,
  opened,
  prefetch,
  read,
  type ReadStep,
  recentRanks,
  tick,
} from "../../../src/tier/cache/cache_core.ts";

// The cache's decisions are pure: events in, state and effects out.
const config = { budgetBytes: 1000, objectsMax: 100, lowWatermarkPercent: 80, trimMinIntervalMs: 5000 };

const chunk = (key: string, bytes = 100): ChunkRef => ({
  objectKey: `o/${key}`,
  cacheKey: key,
  span: { chunk: 0, start: 0, end: bytes },
});
/** A poll of a chunk from its start, for the whole chunk (no first range) unless `firstRangeEnd`. */
const poll = (key: string, bytes = 100, o: Partial<ChunkRead> = {}): ChunkRead => ({
  ...chunk(key, bytes),
  cold: false,
  position: 0,
  windowBytes: 64,
  firstRangeEnd: null,
  ...o,
});
const deleted = (effects: CacheEffect[]) => effects.flatMap((e) => e.kind === "delete_chunk" ? [e.key] : []);
const fetchStarted = (step: { effects: CacheEffect[] }) => step.effects.some((e) => e.kind === "fetch_chunk");

/** A poll misses, its fetch is admitted and lands with the chunk's bytes. */
function downloaded(state: CacheState, key: string, size: number, nowMs: number, cold = false): CacheState {
  const step = read(state, poll(key, size, { cold }), nowMs);
  if (!fetchStarted(step)) throw new Error(`the fetch of ${key} was not admitted`);
  return chunkFetched(step.state, { key, sizeBytes: size });
}

function filled(keys: string[], size = 100, cold: string[] = []) {
  let state = initialCache(config);
  for (const key of keys) state = downloaded(state, key, size, 0, cold.includes(key));
  return state;
}

t.test("space is reserved before a download; one that does not fit forces a trim that makes room for it", (t) => {
  const state = filled(["a", "b", "c", "d", "e", "f", "g", "h", "i"]);
  t.equal(state.usedBytes, 900);
  const big = read(state, poll("big", 200), 1);
  t.equal(fetchStarted(big), true, "admitted after the trim");
  t.same(deleted(big.effects), ["a"], "the least recently used chunk made room: 800 + 200 fits in 1000");
  t.equal(big.state.reservedBytes, 200);
  t.equal(
    chunkFetchFailed(big.state, { key: "big" }).reservedBytes,
    0,
    "an abandoned download gives its reservation back",
  );
  t.end();
});

t.test("only when downloads in flight hold the space is a reservation refused (the poll answers 503)", (t) => {
  const state = initialCache(config);
  const inFlight = read(state, poll("x", 900), 0);
  t.equal(fetchStarted(inFlight), true);
  const refused = read(inFlight.state, poll("y", 200), 1);
  t.equal(fetchStarted(refused), false, "900 bytes reserved by a download in flight cannot be trimmed");
  t.same(refused.wait, { kind: "refused", bytes: 200, noRoom: true });
  t.same(refused.effects, []);
  t.end();
});

t.test("trims evict least recently used first, down to the low watermark, at most once per interval", (t) => {
  let state = filled(["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]);
  state = chunkRead(state, "a", false);
  state = chunkRead(state, "b", false);
  const first = tick(state, 10_000);
  t.same(deleted(first.effects), ["c", "d"], "a and b were read recently; c and d go");
  t.equal(first.state.usedBytes, 800, "down to 80 % of 1000");
  const soon = tick(filled(["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]), 10_000);
  t.same(tick(soon.state, 12_000).effects, [], "under the watermark: nothing to do");
  const overAgain = filled(["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]);
  const once = tick(overAgain, 10_000);
  const refill = downloaded(once.state, "k", 150, 10_001);
  t.same(tick(refill, 11_000).effects, [], "within trim_min_interval the next trim waits");
  t.ok(tick(refill, 15_000).effects.length > 0, "after it, it runs");
  t.end();
});

t.test("a cold reader's chunks enter at the cold end: a backfill cannot evict the working set near the head", (t) => {
  let state = filled(["head1", "head2", "head3", "head4", "head5"]);
  for (const k of ["old1", "old2", "old3", "old4", "old5"]) state = downloaded(state, k, 100, 0, true);
  const trimmed = tick(state, 10_000);
  t.same(
    deleted(trimmed.effects).sort(),
    ["old4", "old5"],
    "the backfill's newest chunks are the coldest, not the head's",
  );
  t.same(
    [...trimmed.state.chunks.keys()].filter((k) => k.startsWith("head")).length,
    5,
    "the working set stays",
  );
  t.end();
});

t.test("the object cap counts too", (t) => {
  let state = initialCache({ ...config, objectsMax: 5 });
  for (const k of ["a", "b", "c", "d", "e"]) state = downloaded(state, k, 1, 0);
  const r = read(state, poll("f", 1), 1);
  t.same(deleted(r.effects), ["a"], "five objects: the oldest goes to make room for the sixth");
  t.equal(fetchStarted(r), true);
  t.end();
});

t.test("a forced trim frees room for the request, not only down to the watermark", (t) => {
  // 790 bytes are under the 800-byte watermark, but 790 + 250 does not fit in 1000.
  let state = initialCache(config);
  for (const [key, size] of [["a", 200], ["b", 200], ["c", 200], ["d", 190]] as const) {
    state = downloaded(state, key, size, 0);
  }
  const r = read(state, poll("e", 250), 1);
  t.same(deleted(r.effects), ["a"], "the oldest chunk goes, leaving room for 250 bytes");
  t.equal(fetchStarted(r), true, "instead of a refusal that would repeat forever");
  t.end();
});

t.test("a cold reader's hits do not promote a chunk: only warm readers move it to the warm end", (t) => {
  let state = filled(["head", "old1", "old2"], 100, ["old1", "old2"]);
  state = chunkRead(state, "old1", true);
  state = chunkRead(state, "old2", true);
  const ranks = Object.fromEntries([...state.chunks.values()].map((c) => [c.key, c.rank]));
  t.ok(
    ranks["head"]! > ranks["old1"]! && ranks["head"]! > ranks["old2"]!,
    "the head stays warmer than the backfill",
  );
  state = chunkRead(state, "old1", false);
  t.ok(state.chunks.get("old1")!.rank > state.chunks.get("head")!.rank, "a warm reader's hit does promote");
  t.end();
});

t.test("a prefetch is admitted only below the low watermark and never forces a trim", (t) => {
  let state = initialCache({
    budgetBytes: 1000,
    objectsMax: 100,
    lowWatermarkPercent: 80,
    trimMinIntervalMs: 0,
  });
  const first = prefetch(state, chunk("a", 500));
  t.ok(fetchStarted(first), "500 of 800 allowed");
  state = chunkFetched(first.state, { key: "a", sizeBytes: 500 });
  t.ok(fetchStarted(prefetch(state, chunk("b", 300))), "up to the watermark exactly");
  const refused = prefetch(state, chunk("b", 301));
  t.notOk(fetchStarted(refused), "past the watermark: refused");
  t.equal(refused.state, state, "and nothing changed: no trim, no reservation");
  t.end();
});

t.test("a read of a chunk among the warmest recentRanks leaves the state as it is; one further back moves it to the warm end", (t) => {
  const keys = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];
  const state = filled(keys);
  t.equal(recentRanks(state), 4, "half of the 80 % a trim keeps of 10 chunks");
  t.equal(chunkRead(state, "j", false), state, "the warmest chunk: no copy");
  t.equal(chunkRead(state, "g", false), state, "fourth from the warm end: no copy");
  const moved = chunkRead(state, "f", false);
  t.not(moved, state, "fifth from the warm end: moved");
  t.equal(moved.chunks.get("f")!.rank, state.warmRank, "to the warm end");
  t.equal(recentRanks(filled(["a"])), 1, "at least the warmest chunk itself");
  // Reads that stayed put are at most recentRanks places out of LRU order: a trim to the low
  // watermark evicts the same chunks as exact LRU would.
  let lazy = state;
  let exact = state;
  for (const key of ["g", "h", "a", "g", "b", "i"]) {
    lazy = chunkRead(lazy, key, false);
    const chunk = exact.chunks.get(key)!;
    const chunks = new Map(exact.chunks);
    chunks.set(key, { ...chunk, rank: exact.warmRank });
    exact = { ...exact, chunks, warmRank: exact.warmRank + 1 };
  }
  t.same(deleted(tick(lazy, 10_000).effects), deleted(tick(exact, 10_000).effects), "c and d either way");
  t.end();
});

// ---- the read path's decisions, as tables --------------------------------------------------

/** What a read step decided, in words: its wait and the kinds of the effects it started. */
function decided(step: ReadStep): string {
  const w = step.wait;
  const wait = w.kind === "chunk"
    ? `chunk ${w.windowBytes}`
    : w.kind === "first_range"
    ? `first_range@${w.start}`
    : `refused ${w.bytes}${w.noRoom ? " no room" : ""}`;
  const effects = step.effects.map((e) =>
    e.kind === "fetch_chunk"
      ? `fetch_chunk ${e.why}`
      : e.kind === "fetch_first_range"
      ? `fetch_first_range ${e.start}-${e.end}`
      : e.kind
  );
  return [wait, ...effects].join(", ");
}

const big = 4096;
/** A cold poll of chunk `k` (4 KiB) at `position` whose first range ends at `end`. */
const coldPoll = (position: number, end: number) => poll("k", big, { position, firstRangeEnd: end });

t.test("a read that finds no cached chunk: what it waits for and what it starts", (t) => {
  const empty = initialCache({ ...config, budgetBytes: 100_000 });
  const chunkInFlight = read(empty, poll("k", big), 0).state;
  const firstInFlight = read(empty, coldPoll(0, 1000), 0).state;
  const cases: [string, CacheState, ChunkRead, string][] = [
    ["nothing in flight, whole chunk", empty, poll("k", big), "chunk 64, fetch_chunk miss"],
    ["nothing in flight, a cold poll", empty, coldPoll(0, 1000), "first_range@0, fetch_first_range 0-1000"],
    ["the chunk's fetch in flight", chunkInFlight, poll("k", big), "chunk 64"],
    ["a cold poll, the chunk's fetch in flight", chunkInFlight, coldPoll(0, 1000), "chunk 64"],
    ["a cold poll the first range in flight holds", firstInFlight, coldPoll(500, 1500), "first_range@0"],
    [
      "a cold poll the first range in flight does not hold: the chunk, as much as its own range",
      firstInFlight,
      coldPoll(1000, 1800),
      "chunk 800, fetch_chunk miss",
    ],
    [
      "a whole-chunk poll beside a first range in flight",
      firstInFlight,
      poll("k", big),
      "chunk 64, fetch_chunk miss",
    ],
  ];
  for (const [name, state, event, expected] of cases) t.equal(decided(read(state, event, 0)), expected, name);
  t.end();
});

t.test("fetches in flight are bounded: first ranges count with chunk fetches; a poll for a whole chunk counts chunk fetches", (t) => {
  let firsts = initialCache({ ...config, budgetBytes: 10_000_000 });
  for (let i = 0; i < fetchesInFlightMax; i++) {
    firsts = read(firsts, poll(`f${i}`, big, { firstRangeEnd: 100 }), 0).state;
  }
  let chunks = initialCache({ ...config, budgetBytes: 10_000_000 });
  for (let i = 0; i < fetchesInFlightMax; i++) chunks = read(chunks, poll(`c${i}`, 10), 0).state;
  const cases: [string, CacheState, ChunkRead, string][] = [
    ["64 first ranges, a cold poll", firsts, coldPoll(0, 1000), "refused 1000"],
    ["64 first ranges, a whole-chunk poll", firsts, poll("k", big), "chunk 64, fetch_chunk miss"],
    ["64 chunk fetches, a cold poll", chunks, coldPoll(0, 1000), "refused 1000"],
    ["64 chunk fetches, a whole-chunk poll", chunks, poll("k", big), `refused ${big}`],
  ];
  for (const [name, state, event, expected] of cases) t.equal(decided(read(state, event, 0)), expected, name);
  t.equal(prefetch(firsts, chunk("p")).effects.length, 0, "no readahead at the bound");
  t.end();
});

t.test("a settled first range hydrates its chunk, cold as its reader, unless the chunk is cached or fetched meanwhile", (t) => {
  const base = initialCache({ ...config, budgetBytes: 100_000 });
  const cold = poll("k", big, { firstRangeEnd: 1000, cold: true });
  const started = read(base, cold, 0).state;
  const hydrated = firstRangeSettled(started, { chunk: cold, cold: true }, 1);
  t.same(hydrated.effects.map((e) => e.kind === "fetch_chunk" && e.why), ["hydration"], "the chunk hydrates");
  t.equal(hydrated.state.firstRanges.size, 0, "the first range is no longer in flight");
  t.equal(hydrated.state.reservedBytes, big, "the whole chunk is reserved");
  t.equal(hydrated.state.fetches.get("k")!.cold, true, "a cold reader's chunk lands at the cold end");
  const alsoFetched = read(started, poll("k", big, { position: 2000, firstRangeEnd: 3000 }), 0).state;
  t.same(
    firstRangeSettled(alsoFetched, { chunk: cold, cold: true }, 1).effects,
    [],
    "the chunk is being fetched",
  );
  const landed = chunkFetched(alsoFetched, { key: "k", sizeBytes: big });
  t.same(firstRangeSettled(landed, { chunk: cold, cold: true }, 1).effects, [], "the chunk is cached");
  t.end();
});

t.test("a fetch that lands becomes a chunk; one that fails leaves nothing; a forgotten chunk leaves the accounting", (t) => {
  const step = read(initialCache(config), poll("k", 300), 0);
  const landed = chunkFetched(step.state, { key: "k", sizeBytes: 280 });
  t.same([landed.usedBytes, landed.reservedBytes, landed.fetches.size, landed.chunks.size], [280, 0, 0, 1]);
  const failed = chunkFetchFailed(step.state, { key: "k" });
  t.same([failed.usedBytes, failed.reservedBytes, failed.fetches.size, failed.chunks.size], [0, 0, 0, 0]);
  const forgotten = chunkForgotten(landed, { key: "k" });
  t.same([forgotten.usedBytes, forgotten.chunks.size], [0, 0]);
  t.equal(chunkForgotten(forgotten, { key: "k" }), forgotten, "forgetting an unknown chunk changes nothing");
  t.equal(prefetch(landed, chunk("k", 300)).effects.length, 0, "a cached chunk is not fetched ahead");
  t.equal(prefetch(step.state, chunk("k", 300)).effects.length, 0, "nor one in flight");
  t.end();
});

t.test("the tick saves the LRU order once a minute, coldest first", (t) => {
  const state = chunkRead(filled(["a", "b", "c", "d", "e", "f"]), "a", false);
  const saves = (s: CacheState, nowMs: number) =>
    tick(s, nowMs).effects.filter((e) => e.kind === "save_access_order");
  t.equal(saves(state, 59_999).length, 0, "not before a minute");
  const saved = tick(state, 60_000);
  t.equal(saves(state, 60_000).length, 1, "then saved");
  t.equal(saves(saved.state, 60_001).length, 0, "and not again at once");
  t.equal(saves(saved.state, 120_000).length, 1, "a minute later again");
  t.same(accessOrder(state), ["b", "c", "d", "e", "f", "a"], "a was read last");
  t.end();
});

t.test("at open, saved chunks keep their order, unknown ones go to the cold end, and what does not fit is deleted", (t) => {
  const files = new Map([["a", 100], ["b", 100], ["c", 100], ["n", 100]]);
  const savedOrder = ["c", "a", "gone", "b"];
  const cases: [string, number, string[], string[]][] = [
    ["room for all", 1000, ["n", "c", "a", "b"], []],
    ["a smaller budget: the coldest go", 250, ["a", "b"], ["n", "c"]],
    ["a chunk larger than the budget", 90, [], ["n", "c", "a", "b"]],
  ];
  for (const [name, budgetBytes, order, gone] of cases) {
    const step = opened(initialCache({ ...config, budgetBytes }), { files, savedOrder });
    t.same(accessOrder(step.state), order, `${name}: the order`);
    t.same(deleted(step.effects), gone, `${name}: deleted`);
    t.equal(step.state.usedBytes, order.length * 100, `${name}: accounted`);
  }
  t.end();
});
