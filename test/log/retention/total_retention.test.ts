import t from "tap";
import { AssertionError } from "../../../src/runtime/assert.ts";
import {
  frontSegmentsToDelete,
  nextRetentionAgeOutMs,
  retentionByLimits,
  type RetentionLimits,
  retentionLimitsOf,
  type RetentionSegment,
  retentionSegmentsPerPassMax,
} from "../../../src/log/retention/total_retention.ts";
import { retentionChain } from "../../helpers/retention_chain.ts";

// Total retention is pure: tables of segments and limits, and the number of front segments deleted.

/** Segments of 100 offsets and 1000 bytes each, the last one active; `newestMs[i]` stamps segment i. */
const chain = (newestMs: number[], locations: RetentionSegment["location"][] = []) =>
  retentionChain(newestMs, locations, "local");

const limits = (l: Partial<RetentionLimits>): RetentionLimits => ({
  maxAgeMs: null,
  maxBytes: null,
  barrierOffset: null,
  ...l,
});

t.test("limits: which front segments a pass deletes", (t) => {
  const wallMs = 100_000;
  const rows: { name: string; segments: RetentionSegment[]; limits: RetentionLimits; deletes: number }[] = [
    {
      name: "by size: down to what fits, counting every segment",
      segments: chain([1, 2, 3, 4, 5]),
      limits: limits({ maxBytes: 2500 }),
      deletes: 3,
    },
    {
      name: "by size: remote segments count toward the retained bytes",
      segments: chain([1, 2, 3, 4, 5], ["remote", "remote"]),
      limits: limits({ maxBytes: 3000 }),
      deletes: 2,
    },
    {
      name: "by size: exactly at the limit keeps everything",
      segments: chain([1, 2, 3]),
      limits: limits({ maxBytes: 3000 }),
      deletes: 0,
    },
    {
      name: "by age: segments whose newest message is older than the age",
      segments: chain([10_000, 20_000, 70_000, 80_000, 90_000]),
      limits: limits({ maxAgeMs: 40_000 }),
      deletes: 2,
    },
    {
      name: "by age: stops at the first young segment even if a later one is old",
      segments: chain([10_000, 90_000, 10_000, 95_000]),
      limits: limits({ maxAgeMs: 40_000 }),
      deletes: 1,
    },
    {
      name: "either limit: age or size",
      segments: chain([10_000, 90_000, 90_000, 90_000]),
      limits: limits({ maxAgeMs: 40_000, maxBytes: 2000 }),
      deletes: 2,
    },
    {
      name: "never the active segment, even when everything is over the limits",
      segments: chain([1, 2, 3]),
      limits: limits({ maxBytes: 0, maxAgeMs: 1 }),
      deletes: 2,
    },
    {
      name: "the consumer barrier keeps the segment a consumer offset points into, and all after it",
      segments: chain([1, 2, 3, 4, 5]),
      limits: limits({ maxBytes: 0, barrierOffset: 150 }),
      deletes: 1,
    },
    {
      name: "a barrier at a segment's start keeps that segment",
      segments: chain([1, 2, 3, 4, 5]),
      limits: limits({ maxBytes: 0, barrierOffset: 200 }),
      deletes: 2,
    },
    {
      name: "a barrier at offset 0 keeps everything",
      segments: chain([1, 2, 3]),
      limits: limits({ maxBytes: 0, barrierOffset: 0 }),
      deletes: 0,
    },
  ];
  for (const row of rows) {
    t.equal(
      frontSegmentsToDelete(row.segments, retentionByLimits(row.limits, wallMs)),
      row.deletes,
      row.name,
    );
  }
  t.end();
});

t.test("a pass deletes at most its budget, and an unsealed front stops it", (t) => {
  const long = chain(Array.from({ length: 40 }, (_, i) => i));
  t.equal(frontSegmentsToDelete(long, () => true), retentionSegmentsPerPassMax);
  t.equal(frontSegmentsToDelete(chain([1]), () => true), 0, "the active segment alone");
  const unsealed = chain([1, 2, 3]).map((s, i) => (i === 0 ? { ...s, sealed: false } : s));
  t.equal(frontSegmentsToDelete(unsealed, () => true), 0);
  t.end();
});

t.test("the decision sees the bytes retained with the segments before it gone", (t) => {
  const seen: number[] = [];
  frontSegmentsToDelete(chain([1, 2, 3, 4]), (_s, retained) => {
    seen.push(retained);
    return true;
  });
  t.same(seen, [4000, 3000, 2000]);
  t.end();
});

t.test("a topic's limits: none without age or size; the barrier only on tiered topics that keep it", (t) => {
  const options = {
    retentionMaxAgeMs: null,
    retentionMaxBytes: null,
    tiered: true,
    retentionConsumerBarrier: true,
    timestampType: "create_time",
  };
  const rows = [
    { options, minimum: 5, expected: null },
    {
      options: { ...options, retentionMaxBytes: 10 },
      minimum: 5,
      expected: limits({ maxBytes: 10, barrierOffset: 5 }),
    },
    {
      options: { ...options, retentionMaxAgeMs: 7, tiered: false },
      minimum: 5,
      expected: limits({ maxAgeMs: 7 }),
    },
    {
      options: { ...options, retentionMaxAgeMs: 7, retentionConsumerBarrier: false },
      minimum: 5,
      expected: limits({ maxAgeMs: 7 }),
    },
    { options: { ...options, retentionMaxBytes: 10 }, minimum: null, expected: limits({ maxBytes: 10 }) },
  ];
  for (const [i, row] of rows.entries()) {
    t.same(retentionLimitsOf(row.options, row.minimum), row.expected, `row ${i}`);
  }
  t.end();
});

t.test("a pass refuses an empty chain, a chain with a hole, and negative limits", (t) => {
  const holed = chain([1, 2, 3]).map((s, i) => (i === 2 ? { ...s, startOffset: 250 } : s));
  t.throws(() => frontSegmentsToDelete([], () => true), AssertionError, "not even the active segment");
  t.throws(() => frontSegmentsToDelete(holed, () => true), AssertionError);
  t.throws(() => retentionByLimits(limits({ maxBytes: -1 }), 0), AssertionError);
  t.end();
});

t.test("the next age-out: when the front sealed segment passes the age limit, and a pass then deletes it", (t) => {
  const segments = chain([1000, 2000, 3000]);
  t.equal(
    nextRetentionAgeOutMs(segments, 500, 1200),
    1501,
    "a millisecond after its newest message plus the limit",
  );
  const decide = retentionByLimits(limits({ maxAgeMs: 500 }), 1501);
  t.equal(frontSegmentsToDelete(segments, decide), 1, "at that moment a pass deletes it");
  t.equal(
    frontSegmentsToDelete(segments, retentionByLimits(limits({ maxAgeMs: 500 }), 1500)),
    0,
    "not before",
  );
  t.equal(nextRetentionAgeOutMs(segments, 500, 1501), null, "already past: not a matter of time");
  t.equal(nextRetentionAgeOutMs(segments, null, 0), null, "no age limit");
  t.equal(nextRetentionAgeOutMs(chain([1000]), 500, 0), null, "only the active segment");
  t.end();
});
