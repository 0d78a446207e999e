import t from "tap";
import { AssertionError } from "../../../src/runtime/assert.ts";
import type { RetentionSegment } from "../../../src/log/retention/total_retention.ts";
import { retentionChain } from "../../helpers/retention_chain.ts";
import {
  decideLocalRetention,
  evictionSegmentsPerPassMax,
  evictionVictims,
  keepLocalWithin,
  localBytesOf,
  type LocalEnvelope,
  nextLocalAgeOutUs,
  overshootBytes,
} from "../../../src/log/retention/local_retention.ts";

// Local retention is pure: tables of segments, floor and envelope, and the decisions they give.

/** Segments of 100 offsets and 1000 bytes each, the last one active; `newestMs[i]` stamps segment i. */
const chain = (newestMs: number[], locations: RetentionSegment["location"][] = []) =>
  retentionChain(newestMs, locations, "uploaded");

const envelope = (e: Partial<LocalEnvelope>): LocalEnvelope => ({ ageMs: null, sizeBytes: null, ...e });
const nowUs = 100_000 * 1000;
const starts = (segments: RetentionSegment[]) => segments.map((s) => s.startOffset);

t.test("the envelope: size and age, null unlimited", (t) => {
  const segment = chain([50_000, 0])[0]!;
  const rows: { envelope: LocalEnvelope; localBytes: number; keeps: boolean }[] = [
    { envelope: envelope({}), localBytes: 1e12, keeps: true },
    { envelope: envelope({ sizeBytes: 5000 }), localBytes: 5000, keeps: true },
    { envelope: envelope({ sizeBytes: 5000 }), localBytes: 5001, keeps: false },
    { envelope: envelope({ ageMs: 50_000 }), localBytes: 1e12, keeps: true },
    { envelope: envelope({ ageMs: 49_999 }), localBytes: 0, keeps: false },
    { envelope: envelope({ ageMs: 50_000, sizeBytes: 100 }), localBytes: 101, keeps: false },
  ];
  for (const [i, row] of rows.entries()) {
    t.equal(keepLocalWithin(row.envelope, nowUs)(segment, row.localBytes), row.keeps, `row ${i}`);
  }
  t.end();
});

t.test("victims: below the floor, beyond the envelope, a run from the front", (t) => {
  const rows: {
    name: string;
    segments: RetentionSegment[];
    floor: number;
    envelope: LocalEnvelope;
    victims: number[];
  }[] = [
    {
      name: "everything below the floor when the envelope keeps nothing",
      segments: chain([1, 2, 3, 4, 5]),
      floor: 300,
      envelope: envelope({ sizeBytes: 0 }),
      victims: [0, 100, 200],
    },
    {
      name: "a segment the floor ends in is not below it",
      segments: chain([1, 2, 3, 4, 5]),
      floor: 299,
      envelope: envelope({ sizeBytes: 0 }),
      victims: [0, 100],
    },
    {
      name: "by size: until what stays fits, each victim counted as gone",
      segments: chain([1, 2, 3, 4, 5, 6]),
      floor: Infinity,
      envelope: envelope({ sizeBytes: 3000 }),
      victims: [0, 100, 200],
    },
    {
      name: "by age: stops at the first young segment",
      segments: chain([10_000, 20_000, 90_000, 10_000, 95_000]),
      floor: Infinity,
      envelope: envelope({ ageMs: 50_000 }),
      victims: [0, 100],
    },
    {
      name: "remote segments are walked past and not counted as local bytes",
      segments: chain([1, 2, 3, 4, 5], ["remote", "remote"]),
      floor: Infinity,
      envelope: envelope({ sizeBytes: 2000 }),
      victims: [200],
    },
    {
      name: "never the active segment",
      segments: chain([1, 2]),
      floor: Infinity,
      envelope: envelope({ sizeBytes: 0 }),
      victims: [0],
    },
    {
      name: "an unlimited envelope keeps everything",
      segments: chain([1, 2, 3]),
      floor: Infinity,
      envelope: envelope({}),
      victims: [],
    },
  ];
  for (const row of rows) {
    t.same(
      starts(evictionVictims(row.segments, row.floor, keepLocalWithin(row.envelope, nowUs))),
      row.victims,
      row.name,
    );
  }
  t.end();
});

t.test("a pass evicts at most its budget", (t) => {
  const long = chain(Array.from({ length: 40 }, (_, i) => i));
  t.equal(evictionVictims(long, Infinity, () => false).length, evictionSegmentsPerPassMax);
  t.end();
});

t.test("one look at a partition: evict below the floor, else hold with or without pressure", (t) => {
  const rows: {
    name: string;
    segments: RetentionSegment[];
    floor: number;
    envelope: LocalEnvelope;
    decision: ReturnType<typeof decideLocalRetention>;
  }[] = [
    {
      name: "the oldest local segment is below the floor",
      segments: chain([1, 2, 3], ["remote"]),
      floor: 200,
      envelope: envelope({}),
      decision: { kind: "evict" },
    },
    {
      name: "the floor has not passed it and the envelope wants it gone: pressure",
      segments: chain([1, 2, 3]),
      floor: 50,
      envelope: envelope({ sizeBytes: 1000 }),
      decision: { kind: "hold", underPressure: true },
    },
    {
      name: "the floor has not passed it and the envelope keeps it: no pressure",
      segments: chain([1, 2, 3]),
      floor: 50,
      envelope: envelope({ sizeBytes: 3000 }),
      decision: { kind: "hold", underPressure: false },
    },
    {
      name: "an old segment above the floor is pressure by age",
      segments: chain([1, 99_000, 99_500]),
      floor: 0,
      envelope: envelope({ ageMs: 10_000 }),
      decision: { kind: "hold", underPressure: true },
    },
    {
      name: "nothing sealed and local: no pressure",
      segments: chain([1, 2], ["remote"]),
      floor: 100,
      envelope: envelope({ sizeBytes: 0 }),
      decision: { kind: "hold", underPressure: false },
    },
  ];
  for (const row of rows) {
    t.same(
      decideLocalRetention(row.segments, row.floor, keepLocalWithin(row.envelope, nowUs)),
      row.decision,
      row.name,
    );
  }
  t.end();
});

t.test("local bytes count local and uploaded segments, not remote ones", (t) => {
  t.equal(localBytesOf(chain([1, 2, 3, 4], ["remote", "uploaded", "local"])), 3000);
  t.end();
});

t.test("the decisions refuse a chain with a hole and a negative floor", (t) => {
  const holed = chain([1, 2, 3]).map((s, i) => (i === 1 ? { ...s, startOffset: 150 } : s));
  const keepNone = () => false;
  t.throws(() => evictionVictims(holed, 1000, keepNone), AssertionError);
  t.throws(() => decideLocalRetention(holed, 1000, keepNone), AssertionError);
  t.throws(() => evictionVictims(chain([1, 2]), -1, keepNone), AssertionError);
  t.throws(() => keepLocalWithin(envelope({ sizeBytes: -1 }), nowUs), AssertionError);
  t.end();
});

t.test("the overshoot: local bytes the envelope wants gone, by age or by size, whatever the floor", (t) => {
  // Four sealed segments of 1000 bytes (newest messages at 10, 20, 95 and 99 s) and the active one.
  const segments = chain([10_000, 20_000, 95_000, 99_000, 0]);
  const rows: { envelope: LocalEnvelope; locations?: RetentionSegment["location"][]; overshoot: number }[] = [
    { envelope: envelope({}), overshoot: 0 },
    { envelope: envelope({ ageMs: 50_000 }), overshoot: 2000 },
    { envelope: envelope({ sizeBytes: 3000 }), overshoot: 2000 },
    { envelope: envelope({ ageMs: 2_000, sizeBytes: 4500 }), overshoot: 3000 },
    { envelope: envelope({ ageMs: 50_000 }), locations: ["remote"], overshoot: 1000 },
    { envelope: envelope({ ageMs: 50_000 }), locations: ["remote", "remote"], overshoot: 0 },
  ];
  for (const row of rows) {
    const withLocations = row.locations === undefined
      ? segments
      : chain([10_000, 20_000, 95_000, 99_000, 0], row.locations);
    t.equal(
      overshootBytes(withLocations, keepLocalWithin(row.envelope, nowUs)),
      row.overshoot,
      JSON.stringify(row),
    );
  }
  t.end();
});

t.test("the next local age-out: the oldest sealed local segment's newest message plus the age", (t) => {
  const segments = chain([1000, 2000, 3000], ["remote"]);
  const age = envelope({ ageMs: 500 });
  const outUs = nextLocalAgeOutUs(segments, age, 0);
  t.equal(
    outUs,
    2_500_001,
    "the remote one is past; the next is kept through 2,500 ms and out a microsecond later",
  );
  t.equal(keepLocalWithin(age, outUs! - 1)(segments[1]!, 0), true, "still kept a microsecond before");
  t.equal(keepLocalWithin(age, outUs!)(segments[1]!, 0), false, "out at that moment");
  t.equal(nextLocalAgeOutUs(segments, age, outUs!), null, "already past: not a matter of time");
  t.equal(nextLocalAgeOutUs(segments, envelope({ sizeBytes: 10 }), 0), null, "no age in the envelope");
  t.equal(nextLocalAgeOutUs(chain([1000]), age, 0), null, "only the active segment");
  t.end();
});
