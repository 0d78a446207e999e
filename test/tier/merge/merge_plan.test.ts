import t from "tap";
import { type MergeBounds, type MergeCandidate, planMerge } from "../../../src/tier/merge/merge_plan.ts";

// Segments of 10 offsets each; sizes in kB against a 100 kB target (a segment below 50 kB is small).
const chain = (sizesKb: number[], remote = sizesKb.length): MergeCandidate[] =>
  sizesKb.map((kb, i) => ({
    startOffset: 10 * i,
    endOffset: 10 * i + 9,
    sizeBytes: kb * 1000,
    remote: i < remote,
  }));
const bounds = (over: Partial<MergeBounds> = {}): MergeBounds => ({
  floor: 1_000_000,
  deletedUpToOffset: 0,
  ownFromOffset: 0,
  targetBytes: 100_000,
  segmentsMax: 256,
  epochStartOffsets: new Set(),
  ...over,
});

t.test("a closed run of small remote segments merges, up to the target", (t) => {
  t.same(planMerge(chain([10, 10, 10, 10, 10, 10, 10]), bounds()), { first: 0, count: 7, sizeBytes: 70_000 });
  t.same(
    planMerge(chain([30, 30, 30, 30]), bounds()),
    { first: 0, count: 3, sizeBytes: 90_000 },
    "the fourth would pass the target",
  );
  t.same(
    planMerge(chain([60, 10, 10, 80, 10]), bounds()),
    { first: 1, count: 2, sizeBytes: 20_000 },
    "a big segment after a run closes it",
  );
  t.end();
});

t.test("nothing merges: one small segment alone, or a run still growing at the floor", (t) => {
  t.equal(planMerge(chain([60, 10, 60]), bounds()), null, "one small segment between big ones");
  t.equal(planMerge(chain([10, 10, 10], 3), bounds()), null, "the run reaches the chain's end and is small");
  t.equal(planMerge(chain([10, 10, 10, 10], 3), bounds()), null, "the segment after it is local");
  t.same(
    planMerge(chain([20, 20, 20, 10], 3), bounds()),
    { first: 0, count: 3, sizeBytes: 60_000 },
    "half the target closes a run even at the floor",
  );
  t.end();
});

t.test("only segments in the store, below the floor, above the watermark and the partition's own", (t) => {
  const c = chain([10, 10, 10, 10, 10, 10]);
  t.same(planMerge(c, bounds({ floor: 30 })), null, "three below the floor, the rest would join: not closed");
  t.same(planMerge(c, bounds({ deletedUpToOffset: 10, segmentsMax: 2 })), {
    first: 1,
    count: 2,
    sizeBytes: 20_000,
  });
  t.same(planMerge(chain([10, 10, 10, 10, 10, 10, 80]), bounds({ ownFromOffset: 40 })), {
    first: 4,
    count: 2,
    sizeBytes: 20_000,
  }, "a restore's source segments are left alone");
  t.same(
    planMerge(c, bounds({ segmentsMax: 4 })),
    { first: 0, count: 4, sizeBytes: 40_000 },
    "a run is cut at segmentsMax, and closed by it",
  );
  t.same(planMerge(c, bounds({ epochStartOffsets: new Set([0, 30]) })), {
    first: 0,
    count: 3,
    sizeBytes: 30_000,
  }, "a run ends where a leader epoch starts: every object holds one epoch");
  t.throws(() => planMerge(c, bounds({ segmentsMax: 1 })), /at least two/);
  t.end();
});
