import t from "tap";
import type { ManifestSegment, PartitionManifest } from "../../../src/tier/bucket/manifest.ts";
import {
  chooseIncarnation,
  headsNeeded,
  type ListedSegment,
  planPartition,
} from "../../../src/tier/restore/restore_plan.ts";
import type { TieredObject } from "../../../src/tier/restore/transfer_chain.ts";

// Segments of 10 offsets and 1000 bytes each: segment k holds offsets 10k to 10k + 9.
const keyOf = (start: number) => `p/${String(start).padStart(20, "0")}.log`;
const listed = (starts: number[], over: Partial<ListedSegment> = {}): ListedSegment[] =>
  starts.map((s) => ({
    startOffset: s,
    mergedEndOffset: null,
    logKey: keyOf(s),
    logSizeBytes: 1000,
    indexKey: `${keyOf(s)}.index`,
    ...over,
  }));
const object = (start: number): TieredObject => ({
  key: keyOf(start),
  startOffset: start,
  endOffset: start + 9,
  sizeBytes: 1000,
  indexSizeBytes: 16,
  startTimestampUs: start * 1000,
  endTimestampUs: start * 1000 + 9,
  maxTimestampUs: start * 1000 + 9,
  logCrc32: 7 + start,
  merged: false,
});
const entry = (start: number, evicted = true): ManifestSegment => {
  const o = object(start);
  return {
    startOffset: start,
    endOffset: o.endOffset,
    sizeBytes: o.sizeBytes,
    maxTimestampUs: o.maxTimestampUs,
    logCrc32: evicted ? o.logCrc32 : null,
    indexSizeBytes: evicted ? o.indexSizeBytes : null,
    startTimestampUs: evicted ? o.startTimestampUs : null,
    endTimestampUs: evicted ? o.endTimestampUs : null,
  };
};
const manifest = (segments: ManifestSegment[], deletedUpToOffset = 0): PartitionManifest => ({
  version: 2,
  streamId: 1,
  topicId: 1,
  partitionId: 0,
  createdRevision: "aa",
  purgeGeneration: 0,
  tieredUpToOffset: (segments.at(-1)?.endOffset ?? -1) + 1,
  deletedUpToOffset,
  segments,
});
const headsOf = (keys: string[]) => new Map(keys.map((k) => [k, object(Number(k.slice(2, 22)))] as const));
const inc = { createdRevision: "aa", purgeGeneration: 0 };

t.test("the newest generation is restored; a dead one, or two revisions, refuse; none is null", (t) => {
  const i = (purgeGeneration: number, dead = false) => ({
    createdRevision: "aa",
    purgeGeneration,
    dead,
    hasManifest: true,
  });
  t.same(chooseIncarnation("1/1/0", [i(0, true), i(2), i(1)]), i(2));
  t.equal(chooseIncarnation("1/1/0", []), null);
  t.throws(
    () => chooseIncarnation("1/1/0", [i(0), i(1, true)]),
    /Cannot restore: partition 1\/1\/0's incarnation aa-1 is marked dead/,
  );
  t.throws(
    () => chooseIncarnation("1/1/0", [i(0), { ...i(0), createdRevision: "bb" }]),
    /has incarnations of 2 revisions: aa, bb/,
  );
  t.end();
});

t.test("a whole manifest needs no HEAD; what it lacks, or describes otherwise, does", (t) => {
  const m = manifest([entry(0), entry(10), entry(20, false)]);
  t.same(
    headsNeeded(m, listed([0, 10, 20, 30])),
    [keyOf(20), keyOf(30)],
    "a local-at-the-time segment and a newer one",
  );
  t.same(headsNeeded(null, listed([0, 10])), [keyOf(0), keyOf(10)], "no manifest: every segment");
  t.same(
    headsNeeded(m, [...listed([0]), ...listed([10], { logSizeBytes: 999 })]),
    [keyOf(10)],
    "another size",
  );
  t.same(
    headsNeeded(manifest([entry(0), entry(10)], 10), listed([0, 10])),
    [],
    "below the watermark: not restored",
  );
  t.same(headsNeeded(m, listed([0], { indexKey: null })), [], "without its .index: not restored");
  t.end();
});

t.test("the plan takes the manifest's fields and the HEADs', and reports where each range came from", (t) => {
  const m = manifest([entry(0), entry(10), entry(20, false)]);
  const plan = planPartition(inc, m, listed([0, 10, 20, 30]), headsOf([keyOf(20), keyOf(30)]));
  t.same(plan.segments.map((s) => [s.startOffset, s.source]), [[0, "manifest"], [10, "manifest"], [
    20,
    "listing",
  ], [30, "listing"]]);
  t.same(plan.segments[1], { ...object(10), source: "manifest" }, "every marker field");
  t.equal(plan.nextOffset, 40);
  t.same(plan.sources, [{ fromOffset: 0, toOffset: 19, source: "manifest" }, {
    fromOffset: 20,
    toOffset: 39,
    source: "listing",
  }]);
  t.same(plan.leftOut, []);
  t.end();
});

t.test("without a manifest the listing and HEADs make the whole plan", (t) => {
  const plan = planPartition(inc, null, listed([0, 10, 20]), headsOf([keyOf(0), keyOf(10), keyOf(20)]));
  t.same(plan.sources, [{ fromOffset: 0, toOffset: 29, source: "listing" }]);
  t.equal(plan.nextOffset, 30);
  t.end();
});

t.test("a gap, a missing object or an unreadable HEAD leaves out what lies before it; a manifest entry without objects is not restored", (t) => {
  const m = manifest([entry(0), entry(10), entry(20), entry(30)]);
  // 10's objects are gone (deleted after the manifest), 40's .index is missing, 50 could not be read.
  const found = [...listed([0, 20, 30]), ...listed([40], { indexKey: null }), ...listed([50])];
  const plan = planPartition(inc, m, found, new Map());
  t.same(plan.segments.map((s) => s.startOffset), [20, 30], "the newest gapless run the bucket holds whole");
  t.equal(plan.nextOffset, 40);
  t.same(plan.leftOut.map((l) => [l.startOffset, l.reason]), [
    [0, "a gap lies between it and offset 20"],
    [40, "its .index object is missing"],
    [50, "its object could not be read"],
  ]);
  const empty = planPartition(inc, null, [], new Map());
  t.same(
    [empty.segments, empty.nextOffset, empty.sources],
    [[], 0, []],
    "nothing in the bucket: an empty plan",
  );
  t.end();
});

t.test("a merge's object is restored instead of the segments it replaced, from the manifest or a HEAD", (t) => {
  // Segments 0, 10 and 20 merged into one object of offsets 0 to 29; the replaced ones are still listed.
  const mergedKey = `p/${String(0).padStart(20, "0")}-${String(29).padStart(20, "0")}.log`;
  const mergedListing: ListedSegment = {
    startOffset: 0,
    mergedEndOffset: 29,
    logKey: mergedKey,
    logSizeBytes: 3000,
    indexKey: `${mergedKey}.index`,
  };
  const mergedObject: TieredObject = {
    ...object(0),
    key: mergedKey,
    endOffset: 29,
    sizeBytes: 3000,
    merged: true,
  };
  const listing = [...listed([0, 10, 20, 30]), mergedListing];
  for (
    const [how, m, heads] of [
      ["from the HEADs", null, headsOf([keyOf(0), keyOf(10), keyOf(20), keyOf(30)])],
      [
        "from the manifest",
        manifest([{ ...entry(0), endOffset: 29, sizeBytes: 3000, merged: true }, entry(30)]),
        null,
      ],
    ] as const
  ) {
    const allHeads = new Map(heads ?? []);
    if (heads !== null) allHeads.set(mergedKey, mergedObject);
    const plan = planPartition(inc, m, listing, allHeads);
    t.same(
      plan.segments.map((s) => [s.startOffset, s.endOffset, s.merged]),
      [[0, 29, true], [30, 39, false]],
      how,
    );
    t.equal(plan.segments[0]!.key, mergedKey, how);
    t.same(plan.leftOut, [], `${how}: the replaced segments are not reported left out`);
    t.equal(plan.nextOffset, 40);
  }
  t.same(
    headsNeeded(manifest([entry(0), entry(10), entry(20), entry(30)]), listing),
    [mergedKey],
    "a manifest written before the merge does not describe the merge's object: it needs a HEAD, and the replaced ones none",
  );
  t.end();
});
