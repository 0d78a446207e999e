import t from "tap";
import {
  access,
  commit,
  initialCache,
  recentRanks,
  releaseReservation,
  reserve,
  reserveIfRoom,
  trim,
} from "../../src/tier/cache_core.ts";

// The cache's accounting is pure: events in, state and effects out.
const config = { budgetBytes: 1000, objectsMax: 100, lowWatermarkPercent: 80, trimMinIntervalMs: 5000 };

function filled(keys: string[], size = 100, cold: string[] = []) {
  let state = initialCache(config);
  for (const key of keys) {
    const r = reserve(state, size, 0);
    state = commit(r.state, { key, reservedBytes: size, sizeBytes: size, cold: cold.includes(key) });
  }
  return state;
}
const deleted = (effects: { key: string }[]) => effects.map((e) => e.key);

t.test("space is reserved before a download; one that does not fit forces a trim that makes room for it", (t) => {
  const state = filled(["a", "b", "c", "d", "e", "f", "g", "h", "i"]);
  t.equal(state.usedBytes, 900);
  const big = reserve(state, 200, 1);
  t.equal(big.admitted, true, "admitted after the trim");
  t.same(deleted(big.effects), ["a"], "the least recently used chunk made room: 800 + 200 fits in 1000");
  t.equal(big.state.reservedBytes, 200);
  t.equal(
    releaseReservation(big.state, 200).reservedBytes,
    0,
    "an abandoned download gives its reservation back",
  );
  t.end();
});

t.test("only when downloads in flight hold the space is a reservation refused (the poll answers 503)", (t) => {
  const state = initialCache(config);
  const inFlight = reserve(state, 900, 0);
  t.equal(inFlight.admitted, true);
  const refused = reserve(inFlight.state, 200, 1);
  t.equal(refused.admitted, false, "900 bytes reserved by a download in flight cannot be trimmed");
  t.same(refused.effects, []);
  t.end();
});

t.test("trims evict least recently used first, down to the low watermark, at most once per interval", (t) => {
  let state = filled(["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]);
  state = access(state, "a");
  state = access(state, "b");
  const first = trim(state, 10_000);
  t.same(deleted(first.effects), ["c", "d"], "a and b were read recently; c and d go");
  t.equal(first.state.usedBytes, 800, "down to 80 % of 1000");
  const soon = trim(filled(["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]), 10_000);
  t.same(trim(soon.state, 12_000).effects, [], "under the watermark: nothing to do");
  const overAgain = filled(["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]);
  const once = trim(overAgain, 10_000);
  const refill = commit(reserve(once.state, 150, 10_001).state, {
    key: "k",
    reservedBytes: 150,
    sizeBytes: 150,
    cold: false,
  });
  t.same(trim(refill, 11_000).effects, [], "within trim_min_interval the next trim waits");
  t.ok(trim(refill, 15_000).effects.length > 0, "after it, it runs");
  t.end();
});

t.test("a cold reader's chunks enter at the cold end: a backfill cannot evict the working set near the head", (t) => {
  let state = filled(["head1", "head2", "head3", "head4", "head5"]);
  for (const k of ["old1", "old2", "old3", "old4", "old5"]) {
    const r = reserve(state, 100, 0);
    state = commit(r.state, { key: k, reservedBytes: 100, sizeBytes: 100, cold: true });
  }
  const trimmed = trim(state, 10_000);
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
  for (const k of ["a", "b", "c", "d", "e"]) {
    state = commit(reserve(state, 1, 0).state, { key: k, reservedBytes: 1, sizeBytes: 1, cold: false });
  }
  const r = reserve(state, 1, 1);
  t.same(deleted(r.effects), ["a"], "five objects: the oldest goes to make room for the sixth");
  t.equal(r.admitted, true);
  t.end();
});

t.test("a forced trim frees room for the request, not only down to the watermark", (t) => {
  // 790 bytes are under the 800-byte watermark, but 790 + 250 does not fit in 1000.
  let state = initialCache(config);
  for (const [key, size] of [["a", 200], ["b", 200], ["c", 200], ["d", 190]] as const) {
    state = commit(reserve(state, size, 0).state, { key, reservedBytes: size, sizeBytes: size, cold: false });
  }
  const r = reserve(state, 250, 1);
  t.same(deleted(r.effects), ["a"], "the oldest chunk goes, leaving room for 250 bytes");
  t.equal(r.admitted, true, "instead of a refusal that would repeat forever");
  t.end();
});

t.test("a cold reader's hits do not promote a chunk: only warm readers move it to the warm end", (t) => {
  let state = filled(["head", "old1", "old2"], 100, ["old1", "old2"]);
  state = access(state, "old1", true);
  state = access(state, "old2", true);
  const ranks = Object.fromEntries([...state.chunks.values()].map((c) => [c.key, c.rank]));
  t.ok(
    ranks["head"]! > ranks["old1"]! && ranks["head"]! > ranks["old2"]!,
    "the head stays warmer than the backfill",
  );
  state = access(state, "old1");
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
  const first = reserveIfRoom(state, 500);
  t.ok(first.admitted, "500 of 800 allowed");
  state = commit(first.state, { key: "a", reservedBytes: 500, sizeBytes: 500, cold: true });
  t.ok(reserveIfRoom(state, 300).admitted, "up to the watermark exactly");
  const refused = reserveIfRoom(state, 301);
  t.notOk(refused.admitted, "past the watermark: refused");
  t.equal(refused.state, state, "and nothing changed: no trim, no reservation");
  t.end();
});

t.test("a read of a chunk among the warmest recentRanks leaves the state as it is; one further back moves it to the warm end", (t) => {
  const keys = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];
  const state = filled(keys);
  t.equal(recentRanks(state), 4, "half of the 80 % a trim keeps of 10 chunks");
  t.equal(access(state, "j"), state, "the warmest chunk: no copy");
  t.equal(access(state, "g"), state, "fourth from the warm end: no copy");
  const moved = access(state, "f");
  t.not(moved, state, "fifth from the warm end: moved");
  t.equal(moved.chunks.get("f")!.rank, state.warmRank, "to the warm end");
  t.equal(recentRanks(filled(["a"])), 1, "at least the warmest chunk itself");
  // Reads that stayed put are at most recentRanks places out of LRU order: a trim to the low
  // watermark evicts the same chunks as exact LRU would.
  let lazy = state;
  let exact = state;
  for (const key of ["g", "h", "a", "g", "b", "i"]) {
    lazy = access(lazy, key);
    const chunk = exact.chunks.get(key)!;
    const chunks = new Map(exact.chunks);
    chunks.set(key, { ...chunk, rank: exact.warmRank });
    exact = { ...exact, chunks, warmRank: exact.warmRank + 1 };
  }
  t.same(deleted(trim(lazy, 10_000).effects), deleted(trim(exact, 10_000).effects), "c and d either way");
  t.end();
});
