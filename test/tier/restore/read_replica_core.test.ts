import t from "tap";
import type { ManifestSegment, PartitionManifest } from "../../../src/tier/bucket/manifest.ts";
import {
  chooseManifest,
  type FollowedPartition,
  followManifest,
  type ListedManifest,
  manifestsByPartition,
} from "../../../src/tier/restore/read_replica_core.ts";

// Segments of 10 offsets each: segment k holds offsets 10k to 10k + 9.
const root = "strata/c1/";
const segment = (start: number): ManifestSegment => ({
  startOffset: start,
  endOffset: start + 9,
  sizeBytes: 1000,
  maxTimestampUs: start,
  logCrc32: 1,
  indexSizeBytes: 16,
  startTimestampUs: start,
  endTimestampUs: start + 9,
});
const manifest = (starts: number[], deletedUpToOffset = 0): PartitionManifest => ({
  version: 2,
  streamId: 1,
  topicId: 2,
  partitionId: 0,
  createdRevision: "aa",
  purgeGeneration: 0,
  tieredUpToOffset: (starts.at(-1) ?? -10) + 10,
  deletedUpToOffset,
  segments: starts.map(segment),
});
const listedManifest = (over: Partial<ListedManifest> = {}): ListedManifest => ({
  createdRevision: "aa",
  purgeGeneration: 0,
  key: `${root}meta/1/2/0/aa-0/manifest.bin`,
  sizeBytes: 300,
  etag: '"e1"',
  dead: false,
  ...over,
});
const view = (over: Partial<FollowedPartition> = {}): FollowedPartition => ({
  incarnation: { createdRevision: "aa", purgeGeneration: 0 },
  firstOffset: 0,
  nextOffset: 20,
  etag: null,
  ...over,
});

t.test("one listing gives each partition its manifests, their ETags and dead marks", (t) => {
  const objects = [
    { key: `${root}meta/1/2/topic.bin`, sizeBytes: 90, etag: '"t"', lastModifiedMs: 0 },
    { key: `${root}meta/1/2/0/aa-0/manifest.bin`, sizeBytes: 300, etag: '"e1"', lastModifiedMs: 0 },
    { key: `${root}meta/1/2/1/bb-0/dead`, sizeBytes: 1, etag: '"d"', lastModifiedMs: 0 },
    { key: `${root}meta/1/2/1/bb-0/manifest.bin`, sizeBytes: 200, etag: '"e2"', lastModifiedMs: 0 },
    { key: `${root}meta/1/2/1/bb-1/manifest.bin`, sizeBytes: 210, etag: '"e3"', lastModifiedMs: 0 },
  ];
  const byPartition = manifestsByPartition(root, objects);
  t.same([...byPartition.keys()].sort(), [0, 1]);
  t.same(byPartition.get(0), [listedManifest()]);
  t.same(
    byPartition.get(1)!.map((m) => [m.purgeGeneration, m.etag, m.dead, m.sizeBytes]),
    [[0, '"e2"', true, 200], [1, '"e3"', false, 210]],
  );
  t.end();
});

t.test("a manifest is read only when its ETag differs from the one read last", (t) => {
  t.same(chooseManifest(view({ etag: '"e1"' }), [listedManifest()]), { kind: "unchanged" });
  t.same(chooseManifest(view({ etag: '"e0"' }), [listedManifest()]), {
    kind: "read",
    manifest: listedManifest(),
  });
  t.equal(chooseManifest(view(), [listedManifest()]).kind, "read", "never read: read");
  t.equal(
    chooseManifest(view({ etag: '"e1"' }), [listedManifest({ etag: null })]).kind,
    "read",
    "a listing without ETags reads every time",
  );
  t.same(chooseManifest(view(), []), { kind: "unchanged" }, "no manifest yet: nothing to read");
  t.end();
});

t.test("the followed incarnation ends when it is marked dead or purged", (t) => {
  const dead = chooseManifest(view(), [listedManifest({ dead: true })]);
  t.equal(dead.kind, "ended");
  t.match(dead, { reason: /aa-0 is marked dead/ });
  const purged = chooseManifest(view(), [
    listedManifest(),
    listedManifest({ purgeGeneration: 1, key: `${root}meta/1/2/0/aa-1/manifest.bin` }),
  ]);
  t.match(purged, { kind: "ended", reason: /purged after incarnation aa-0/ });
  t.end();
});

t.test("a partition that follows no incarnation yet takes the newest live one", (t) => {
  const newest = listedManifest({ purgeGeneration: 2, key: "k2" });
  const choice = chooseManifest(view({ incarnation: null, nextOffset: 0 }), [
    listedManifest(),
    newest,
    listedManifest({ purgeGeneration: 3, key: "k3", dead: true }),
  ]);
  t.same(choice, { kind: "read", manifest: newest });
  t.end();
});

t.test("a manifest's segments from the partition's end on are planted, contiguous", (t) => {
  const step = followManifest(view(), manifest([0, 10, 20, 30, 40]), 256);
  t.same(step.plant.map((s) => s.startOffset), [20, 30, 40]);
  t.equal(step.retireBelow, null);
  t.equal(step.gapAt, null);
  const capped = followManifest(view(), manifest([0, 10, 20, 30, 40]), 2);
  t.same(capped.plant.map((s) => s.startOffset), [20, 30], "at most plantMax");
  const none = followManifest(view({ nextOffset: 50 }), manifest([0, 10, 20, 30, 40]), 256);
  t.same(none.plant, [], "nothing new");
  t.end();
});

t.test("a gap in the source's segments stops the planting where it is", (t) => {
  const step = followManifest(view(), manifest([0, 10, 30, 40]), 256);
  t.same(step.plant, []);
  t.equal(step.gapAt, 20);
  const partway = followManifest(view(), manifest([20, 30, 50]), 256);
  t.same(partway.plant.map((s) => s.startOffset), [20, 30]);
  t.equal(partway.gapAt, 40);
  t.end();
});

t.test("an empty partition starts at the source's oldest segment", (t) => {
  const step = followManifest(view({ firstOffset: 0, nextOffset: 0 }), manifest([30, 40], 30), 256);
  t.same(step.plant.map((s) => s.startOffset), [30, 40]);
  t.equal(step.retireBelow, null, "nothing to retire in an empty partition");
  t.equal(step.gapAt, null);
  t.end();
});

t.test("the source's retention watermark retires what lies below it", (t) => {
  const step = followManifest(view({ firstOffset: 0, nextOffset: 50 }), manifest([20, 30, 40], 20), 256);
  t.equal(step.retireBelow, 20);
  t.same(step.plant, []);
  const already = followManifest(view({ firstOffset: 20, nextOffset: 50 }), manifest([20, 30, 40], 20), 256);
  t.equal(already.retireBelow, null, "a watermark at the log start retires nothing");
  t.end();
});

t.test("a merge across the partition's end is planted first, replacing the segments it covers", (t) => {
  const merged = { ...segment(10), endOffset: 39, sizeBytes: 3000, merged: true };
  const m = { ...manifest([0]), segments: [segment(0), merged, segment(40)] };
  const step = followManifest(view(), m, 256);
  t.same(step.plant.map((s) => [s.startOffset, s.endOffset]), [[10, 39], [40, 49]]);
  t.equal(step.gapAt, null);
  const within = {
    ...manifest([0]),
    segments: [{ ...segment(0), endOffset: 19, merged: true }, segment(20)],
  };
  const inside = followManifest(view(), within, 256);
  t.same(
    inside.plant.map((s) => s.startOffset),
    [20],
    "a merge of segments the partition holds is not planted",
  );
  t.same(inside.replace.map((s) => [s.startOffset, s.endOffset]), [[0, 19]], "it replaces them");
  t.same(step.replace, [], "a merge across the end is planted, not a replace");
  t.end();
});
