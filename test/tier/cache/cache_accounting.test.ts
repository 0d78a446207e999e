import t from "tap";
import {
  type CacheState,
  freeRoom,
  initialCache,
  insertChunk,
  roomBelowLowWatermark,
  trim,
} from "../../../src/tier/cache/cache_core.ts";

// The budget arithmetic under the cache's decisions: room, the low watermark, ranks and trims.

const config = { budgetBytes: 1000, objectsMax: 10, lowWatermarkPercent: 80, trimMinIntervalMs: 5000 };

/** A cache holding chunks of `sizes`, keyed c0, c1, …, coldest first, and `reservedBytes` in one fetch. */
function holding(sizes: number[], reservedBytes = 0): CacheState {
  let state = initialCache(config);
  sizes.forEach((size, i) => state = insertChunk(state, `c${i}`, size, false));
  if (reservedBytes === 0) return state;
  const fetches = new Map([["r", { key: "r", reservedBytes, cold: false }]]);
  return { ...state, fetches, reservedBytes };
}

t.test("room: what fits is admitted as it is; what does not forces a trim for it; fetches in flight cannot be trimmed", (t) => {
  const cases: [string, CacheState, number, boolean, string[]][] = [
    ["fits", holding([300, 300]), 400, true, []],
    ["over the budget: the coldest go until it fits", holding([300, 300, 300]), 300, true, ["c0"]],
    ["a reservation holds the space", holding([], 900), 200, false, []],
    ["the object cap", holding(Array(10).fill(1)), 1, true, ["c0", "c1"]],
  ];
  for (const [name, state, bytes, admitted, deleted] of cases) {
    const room = freeRoom(state, bytes, 0);
    t.equal(room.admitted, admitted, `${name}: admitted`);
    t.same(room.deleted.map((d) => d.key), deleted, `${name}: deleted`);
  }
  t.end();
});

t.test("room below the low watermark counts what is held, what is reserved and one more object", (t) => {
  const cases: [string, CacheState, number, boolean][] = [
    ["up to 800 bytes", holding([500]), 300, true],
    ["one byte over", holding([500]), 301, false],
    ["a reservation counts", holding([400], 100), 301, false],
    ["eight objects at most", holding(Array(7).fill(1)), 1, true],
    ["not a ninth", holding(Array(8).fill(1)), 1, false],
  ];
  for (const [name, state, bytes, room] of cases) t.equal(roomBelowLowWatermark(state, bytes), room, name);
  t.end();
});

t.test("ranks: warm chunks enter above every other, cold ones below; a chunk replaced is counted once", (t) => {
  let state = insertChunk(initialCache(config), "w1", 10, false);
  state = insertChunk(state, "k1", 10, true);
  state = insertChunk(state, "w2", 10, false);
  state = insertChunk(state, "k2", 10, true);
  const order = [...state.chunks.values()].sort((a, b) => a.rank - b.rank).map((c) => c.key);
  t.same(order, ["k2", "k1", "w1", "w2"]);
  t.equal(insertChunk(state, "w1", 30, false).usedBytes, 60, "40 - 10 + 30");
  t.end();
});

t.test("a trim runs only over the low watermark and once per interval unless forced", (t) => {
  const over = holding([300, 300, 300]);
  const first = trim(over, 10_000, false, 0);
  t.same(first.deleted.map((d) => d.key), ["c0"], "down to 800 bytes: the coldest goes");
  t.equal(first.state.lastTrimMs, 10_000);
  const again = insertChunk(insertChunk(first.state, "n1", 400, false), "n2", 200, false);
  t.same(trim(again, 12_000, false, 0).deleted, [], "within the interval: waits");
  t.same(trim(again, 12_000, true, 0).deleted.map((d) => d.key), ["c1", "c2"], "forced: runs");
  t.same(trim(holding([100]), 20_000, true, 0).deleted, [], "under the watermark: nothing to do");
  t.end();
});
