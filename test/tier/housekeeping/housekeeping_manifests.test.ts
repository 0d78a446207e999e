import t from "tap";
import { RequestBudget } from "../../../src/tier/housekeeping/housekeeping_budget.ts";
import { uploadManifest } from "../../../src/tier/housekeeping/housekeeping_manifests.ts";
import { decodeManifest, manifestOf } from "../../../src/tier/bucket/manifest.ts";
import { manifestKey, topicManifestKey } from "../../../src/tier/bucket/object_keys.ts";
import { decodeTopicManifest, type TopicFacts } from "../../../src/tier/bucket/topic_manifest.ts";
import { incOf } from "../../helpers/housekeeping_fixture.ts";
import { tierHarness } from "../../helpers/tier_harness.ts";
import { waitFor } from "../../helpers/wait_for.ts";

// The manifest job on its own, over the tier harness's partition and store. The verify pass's
// test follows manifests through the housekeeping shell.

t.test("the manifest of the partition as it is now goes up in one request, and the job says what it describes", async (t) => {
  const h = await tierHarness(t, { ageMs: null, sizeBytes: null });
  await h.produce(20);
  await waitFor(
    "the upload of every sealed segment",
    () => h.partition.superblock.tieredUpToOffset === h.lastSealedEnd() + 1,
    h.ticks(),
  );
  const inc = incOf(h.partition.superblock.createdRevision, 0);
  const budget = new RequestBudget(3, undefined);
  const outcome = await uploadManifest({ store: h.store }, "1/1/0", h.partition, inc, budget);
  const floor = h.partition.superblock.tieredUpToOffset;
  t.same(outcome, { kind: "upload_manifest", partition: "1/1/0", describes: `${floor}:0` });
  t.equal(budget.left, 2, "one request");
  const object = h.sim.peek(manifestKey(inc));
  t.ok(object, "stored under the incarnation's manifest key");
  t.same(
    decodeManifest(object!.bytes),
    manifestOf(h.partition),
    "the manifest of the partition as it is now",
  );
  t.same(object!.metadata, { "format-version": "2" });

  await h.partition.enforceRetention((s) => s.endOffset < 10);
  const again = await uploadManifest({ store: h.store }, "1/1/0", h.partition, inc, budget);
  const watermark = h.partition.superblock.deletedUpToOffset;
  t.ok(watermark > 0);
  t.same(again, { kind: "upload_manifest", partition: "1/1/0", describes: `${floor}:${watermark}` });
  t.equal(decodeManifest(h.sim.peek(manifestKey(inc))!.bytes).deletedUpToOffset, watermark, "written over");
});

const facts = (retentionMs: number): TopicFacts => ({
  streamName: "s",
  topicName: "t",
  createdAtMs: 1_700_000_000_000,
  options: { partitions: 1, tiered: true, retentionMaxAgeMs: retentionMs },
});

t.test("partition 0's job puts the topic manifest beside its own, when its run has room for both", async (t) => {
  const h = await tierHarness(t, { ageMs: null, sizeBytes: null });
  await h.produce(20);
  await waitFor(
    "the upload of every sealed segment",
    () => h.partition.superblock.tieredUpToOffset === h.lastSealedEnd() + 1,
    h.ticks(),
  );
  const inc = incOf(h.partition.superblock.createdRevision, 0);
  const floor = h.partition.superblock.tieredUpToOffset;
  const topicKey = topicManifestKey("strata", "c1", 1, 1);
  const cramped = new RequestBudget(1, undefined);
  const partial = await uploadManifest({ store: h.store }, "1/1/0", h.partition, inc, cramped, {
    facts: facts(1000),
    version: 3,
  });
  t.same(
    partial,
    { kind: "upload_manifest", partition: "1/1/0", describes: `${floor}:0` },
    "no room: the topic waits",
  );
  t.equal(h.sim.peek(topicKey), undefined);
  const budget = new RequestBudget(5, undefined);
  const outcome = await uploadManifest({ store: h.store }, "1/1/0", h.partition, inc, budget, {
    facts: facts(1000),
    version: 3,
  });
  t.same(outcome, { kind: "upload_manifest", partition: "1/1/0", describes: `${floor}:0:t3` });
  t.equal(budget.left, 3, "two requests");
  t.same(decodeTopicManifest(h.sim.peek(topicKey)!.bytes), {
    version: 2,
    clusterId: "c1",
    streamId: 1,
    streamName: "s",
    topicId: 1,
    topicName: "t",
    createdAtMs: 1_700_000_000_000,
    options: { partitions: 1, tiered: true, retentionMaxAgeMs: 1000 },
  });
});

t.test("housekeeping uploads the topic manifest, again when the topic's facts change; evicted segments' entries carry their marker's fields", async (t) => {
  let current = facts(1000);
  const h = await tierHarness(t, { ageMs: null, sizeBytes: 0 }, {
    housekeeping: { idleTimeoutMs: 1000, manifestUploadIntervalMs: 1000 },
    topicFacts: () => current,
  });
  await h.produce(20);
  const topicKey = topicManifestKey("strata", "c1", 1, 1);
  const topicOptions = () => {
    const object = h.sim.peek(topicKey);
    return object === undefined ? null : decodeTopicManifest(object.bytes).options;
  };
  await waitFor("the topic manifest to go up", () => topicOptions() !== null, h.ticks(300_000));
  t.same(topicOptions(), current.options);
  current = facts(2000);
  await waitFor(
    "the topic manifest to follow the options",
    () => (topicOptions() as { retentionMaxAgeMs?: number })?.retentionMaxAgeMs === 2000,
    h.ticks(300_000),
  );
  const inc = incOf(h.partition.superblock.createdRevision, 0);
  const evicted = () => h.partition.log.segments.filter((s) => s.location === "remote");
  await waitFor("a segment to be evicted", () => evicted().length > 0, h.ticks(300_000));
  await waitFor("a manifest listing the evicted segment", () => {
    const object = h.sim.peek(manifestKey(inc));
    if (object === undefined) return false;
    const entries = decodeManifest(object.bytes).segments;
    return evicted().every((s) =>
      entries.some((e) => e.startOffset === s.startOffset && e.logCrc32 !== null)
    );
  }, h.ticks(600_000));
  const entries = decodeManifest(h.sim.peek(manifestKey(inc))!.bytes).segments;
  for (const s of evicted()) {
    const entry = entries.find((e) => e.startOffset === s.startOffset)!;
    t.same(
      [entry.logCrc32, entry.indexSizeBytes, entry.startTimestampUs, entry.endTimestampUs],
      [s.marker!.logCrc32, s.marker!.indexSizeBytes, s.marker!.startTimestampUs, s.marker!.endTimestampUs],
      `segment ${s.startOffset}: the marker's fields`,
    );
  }
});
