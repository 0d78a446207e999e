import t from "tap";
import {
  access,
  commit,
  initialCache,
  releaseReservation,
  reserve,
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

t.test("space is reserved before a download; a download that does not fit is refused and forces a trim", (t) => {
  let state = filled(["a", "b", "c", "d", "e", "f", "g", "h", "i"]);
  t.equal(state.usedBytes, 900);
  const big = reserve(state, 200, 1);
  t.equal(big.admitted, false, "900 used + 200 > 1000: full, the poll answers a transient 503");
  t.same(
    deleted(big.effects),
    ["a"],
    "and a forced trim brings the cache down to its 80 % watermark (900 → 800 bytes)",
  );
  state = big.state;
  const retry = reserve(state, 200, 2);
  t.equal(retry.admitted, true, "the retry fits");
  t.equal(retry.state.reservedBytes, 200);
  t.equal(
    releaseReservation(retry.state, 200).reservedBytes,
    0,
    "an abandoned download gives its reservation back",
  );
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
  t.equal(r.admitted, false, "five objects: the cap is reached");
  t.same(deleted(r.effects), ["a"], "trimmed to 80 % of five (four objects)");
  t.end();
});
