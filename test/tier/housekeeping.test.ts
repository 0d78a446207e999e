import t from "tap";
import { decodeManifest } from "../../src/tier/manifest.ts";
import { incarnationPrefix, manifestKey, parseObjectKey, segmentKeys } from "../../src/tier/object_keys.ts";
import { tierHarness } from "../helpers/tier_harness.ts";

const root = "strata/c1/";
const incOf = (revision: string, generation: number) => ({
  prefix: "strata",
  clusterId: "c1",
  streamId: 1,
  topicId: 1,
  partitionId: 0,
  createdRevision: revision,
  purgeGeneration: generation,
});

async function metric(registry: { metrics(): Promise<string> }, pattern: RegExp): Promise<number> {
  const match = pattern.exec(await registry.metrics());
  return match === null ? 0 : Number(match[1]);
}

t.test("objects below the retention watermark are deleted only after delete_grace, a batch per run, within the request quota", async (t) => {
  const h = await tierHarness(t, { ageMs: null, sizeBytes: 100_000 }, {
    housekeeping: { idleTimeoutMs: 1000, deleteBatchPerPass: 2, requestQuota: 3 },
  });
  await h.produce(40);
  t.ok(await h.runUntil(() => h.partition.superblock.tieredUpToOffset === h.lastSealedEnd() + 1), "uploaded");
  await h.partition.enforceRetention((s) => s.endOffset < 20);
  const watermark = h.partition.superblock.deletedUpToOffset;
  t.ok(watermark >= 15, `retention raised the watermark to ${watermark}`);
  const prefix = incarnationPrefix(incOf(h.partition.superblock.createdRevision, 0));
  const below = h.sim.keys().filter((k) => {
    const p = parseObjectKey(root, k);
    return k.startsWith(prefix) && p.kind === "segment" && p.startOffset < watermark;
  });
  const above = h.sim.keys().filter((k) => k.startsWith(prefix) && !below.includes(k));
  t.ok(below.length >= 6, `${below.length} objects below the watermark`);
  const retiredAtMs = h.clock.nowMs();

  const goneAtMs = new Map<string, number>();
  const deletedPerCheck: number[] = [];
  const track = () => {
    let fresh = 0;
    for (const k of below) {
      if (!goneAtMs.has(k) && h.sim.peek(k) === undefined) {
        goneAtMs.set(k, h.clock.nowMs());
        fresh++;
      }
    }
    if (fresh > 0) deletedPerCheck.push(fresh);
    return goneAtMs.size === below.length;
  };
  t.ok(await h.runUntil(track, 20_000), "every object below the watermark was deleted in the end");
  const first = Math.min(...goneAtMs.values());
  t.ok(
    first - retiredAtMs >= 60_000,
    `the first deletion came ${first - retiredAtMs} ms after the watermark`,
  );
  t.ok(deletedPerCheck.every((n) => n <= 2), `at most delete_batch_per_pass (2) per run: ${deletedPerCheck}`);
  t.ok(above.every((k) => h.sim.peek(k) !== undefined), "objects at or above the watermark are kept");
  const runs = await metric(h.registry, /strata_housekeeping_runs_total (\d+)/);
  const requests = await metric(h.registry, /strata_housekeeping_requests_total (\d+)/);
  t.ok(runs > 0 && requests <= runs * 3, `${requests} requests in ${runs} runs: within request_quota 3`);
  t.equal(
    await metric(h.registry, /strata_housekeeping_deleted_objects_total\{reason="watermark"\} (\d+)/),
    below.length,
  );
});

t.test("no object younger than delete_grace is deleted, even below the watermark", async (t) => {
  const h = await tierHarness(t, { ageMs: null, sizeBytes: null }, { housekeeping: { idleTimeoutMs: 1000 } });
  await h.produce(20);
  t.ok(await h.runUntil(() => h.partition.superblock.tieredUpToOffset === h.lastSealedEnd() + 1));
  await h.runUntil(() => false, 7000); // 70 s: the uploaded objects are older than the grace
  await h.partition.enforceRetention((s) => s.endOffset < 10);
  const keys = segmentKeys(incOf(h.partition.superblock.createdRevision, 0), 0);
  // The object of the first segment is written again now, as a late duplicate upload would.
  const copy = h.sim.peek(keys.log)!;
  await h.store.put(keys.log, async function* () {
    yield copy.bytes;
  }, { sizeBytes: copy.bytes.length, metadata: copy.metadata, ifAbsent: false });
  const rewrittenAtMs = h.clock.nowMs();
  t.ok(await h.runUntil(() => h.sim.peek(keys.log) === undefined, 20_000), "deleted in the end");
  t.ok(
    h.clock.nowMs() - rewrittenAtMs >= 60_000,
    `not before it was 60 s old (${h.clock.nowMs() - rewrittenAtMs} ms)`,
  );
});

t.test("purge during an upload: it lands under the old generation, its floor is rejected, the orphan sweep deletes it after the grace", async (t) => {
  const h = await tierHarness(t, { ageMs: null, sizeBytes: null }, {
    housekeeping: { idleTimeoutMs: 1000, orphanSweepIntervalMs: 5000 },
  });
  h.sim.faults = { latencyMs: { min: 2000, max: 2000 } };
  await h.produce(6);
  t.ok(await h.runUntil(() => h.tier.uploadsInFlight() > 0), "an upload is in flight");
  const revision = h.partition.superblock.createdRevision;
  await h.partition.purge();
  h.tier.purged("1/1/0");
  t.equal(h.partition.superblock.purgeGeneration, 1);
  const oldKeys = segmentKeys(incOf(revision, 0), 0);
  t.ok(await h.runUntil(() => h.tier.uploadsInFlight() === 0 && h.sim.peek(oldKeys.index) !== undefined));
  t.ok(h.sim.peek(oldKeys.log), "the upload landed under the old generation's prefix");
  t.equal(
    h.partition.superblock.tieredUpToOffset,
    0,
    "its floor command did not move the new generation's floor",
  );

  h.sim.faults = {};
  await h.produce(12);
  const newKeys = segmentKeys(incOf(revision, 1), 0);
  t.ok(await h.runUntil(() => h.sim.peek(newKeys.log) !== undefined), "the new generation uploads");
  const purgedAtMs = h.clock.nowMs();
  t.ok(
    await h.runUntil(() => h.sim.peek(oldKeys.log) === undefined, 30_000),
    "the orphan sweep deleted the old objects",
  );
  t.equal(h.sim.peek(oldKeys.index), undefined);
  t.ok(h.clock.nowMs() - purgedAtMs >= 60_000, "not before the grace");
  t.ok(h.sim.peek(newKeys.log), "the live generation's objects are kept");
  t.ok(await metric(h.registry, /strata_housekeeping_deleted_objects_total\{reason="orphan"\} (\d+)/) >= 2);
});

t.test("the verify pass re-uploads a missing object from a local .log, reports one whose .log is gone, and manifests describe the remote set", async (t) => {
  const envelopeBytes = 120_000;
  const h = await tierHarness(t, { ageMs: null, sizeBytes: envelopeBytes }, {
    housekeeping: { idleTimeoutMs: 1000, verifyIntervalMs: 20_000 },
  });
  await h.produce(40);
  // Eviction goes one segment at a time, with real disk I/O between: wait for the pass to reach the
  // envelope, not for its first segment, or the segment picked below as "local" may be evicted
  // next (on a slow disk it was, and the verify pass then rightly found nothing to re-upload).
  const evictedToEnvelope = () =>
    h.partition.superblock.tieredUpToOffset === h.lastSealedEnd() + 1 &&
    h.partition.log.segments.some((s) => s.location === "remote") &&
    h.partition.log.localSizeBytes <= envelopeBytes;
  t.ok(await h.runUntil(evictedToEnvelope), "uploaded and evicted down to the envelope");
  const inc = incOf(h.partition.superblock.createdRevision, 0);
  const floor = h.partition.superblock.tieredUpToOffset;
  const remote = h.partition.log.segments.find((s) => s.location === "remote")!;
  const local = h.partition.log.segments.find((s) => s.sealed && s.location !== "remote")!;
  t.ok(local.endOffset < floor, "a segment below the floor whose .log is still local");
  const lost = segmentKeys(inc, remote.startOffset).log;
  const healable = segmentKeys(inc, local.startOffset).log;
  await h.sim.delete([lost, healable]);

  const anomalies = () => metric(h.registry, /strata_tier_verify_anomalies_total\{kind="missing"\} (\d+)/);
  const reuploads = () => metric(h.registry, /strata_tier_verify_reuploads_total (\d+)/);
  let seen = [0, 0];
  // One read of the metrics at a time: a render per tick would pile up under load and starve the pass.
  let reading = false;
  t.ok(
    await h.runUntil(() => {
      if (!reading) {
        reading = true;
        void Promise.all([anomalies(), reuploads()]).then((n) => {
          seen = n;
          reading = false;
        });
      }
      return seen[0]! >= 1 && seen[1]! >= 1;
      // The pass is due 20 s of virtual time after the first look (about 2,000 ticks).
    }, 10_000),
    "the verify pass ran",
  );
  t.ok(h.sim.peek(healable), "the object with a local .log was uploaded again");
  t.equal(await reuploads(), 1);
  t.equal(h.sim.peek(lost), undefined, "the lost one is not invented");
  t.equal(await anomalies(), 1, "it is reported as missing");
  t.equal(h.partition.superblock.tieredUpToOffset, floor, "the floor does not move to hide the loss");

  // Manifests follow the floor at most every manifest_upload_interval: wait for the one of this floor
  // (how long depends on when the last one went up, which real I/O speed shifts in virtual time).
  const manifestNow = () => {
    const object = h.sim.peek(manifestKey(inc));
    return object === undefined ? null : decodeManifest(object.bytes);
  };
  t.ok(await h.runUntil(() => manifestNow()?.tieredUpToOffset === floor, 40_000), "a manifest of this floor");
  const manifest = manifestNow()!;
  t.equal(manifest.tieredUpToOffset, floor);
  t.same(
    manifest.segments.map((s) => s.startOffset),
    h.partition.log.segments.filter((s) => s.sealed && s.endOffset < floor).map((s) => s.startOffset),
    "the manifest lists every segment below the floor",
  );
  t.equal(
    manifest.segments.find((s) => s.startOffset === remote.startOffset)!.logCrc32,
    remote.marker!.logCrc32,
  );
});

t.test("a deleted topic's objects are orphans: the sweep deletes them after the grace and reports what it found", async (t) => {
  let exists = true;
  const h = await tierHarness(t, { ageMs: null, sizeBytes: null }, {
    housekeeping: { idleTimeoutMs: 1000, orphanSweepIntervalMs: 2000, manifestUploadIntervalMs: 1000 },
    liveTable: () => {
      const sb = h.partition.superblock;
      const known = {
        createdRevision: sb.createdRevision,
        purgeGeneration: sb.purgeGeneration,
        deletedUpToOffset: 0,
      };
      return new Map(exists ? [["1/1/0", known]] : []);
    },
  });
  await h.produce(20);
  t.ok(await h.runUntil(() => h.partition.superblock.tieredUpToOffset === h.lastSealedEnd() + 1));
  const inc = incOf(h.partition.superblock.createdRevision, 0);
  t.ok(await h.runUntil(() => h.sim.peek(manifestKey(inc)) !== undefined), "a manifest was uploaded");
  const objects = h.sim.keys().filter((k) => k.startsWith(root));
  t.ok(objects.length >= 7, `${objects.length} objects, manifest included`);
  const sweptBefore = h.housekeeping!.state.sweptAtMs;
  await h.runUntil(() => false, 1000); // 10 s: sweeps run while the topic exists
  t.ok(h.housekeeping!.state.sweptAtMs > sweptBefore, "the sweep ran meanwhile");
  t.ok(objects.every((k) => h.sim.peek(k) !== undefined), "a live incarnation is never swept");

  exists = false; // the topic is deleted: its partition leaves the metadata
  h.tier.removePartition("1/1/0");
  const deletedAtMs = h.clock.nowMs();
  t.ok(
    await h.runUntil(() => objects.every((k) => h.sim.peek(k) === undefined), 30_000),
    "every object swept",
  );
  t.ok(h.clock.nowMs() - deletedAtMs >= 60_000, "after the grace");
  t.ok(await metric(h.registry, /strata_housekeeping_orphans_found_total (\d+)/) >= objects.length);
  t.equal(
    await metric(h.registry, /strata_housekeeping_deleted_objects_total\{reason="orphan"\} (\d+)/),
    objects.length,
  );
});

t.test("the orphan sweep goes by its own clock, not the store's: an hour of skew either way neither delays nor hastens it", async (t) => {
  for (const skewMs of [3_600_000, -3_600_000]) {
    let exists = true;
    const h = await tierHarness(t, { ageMs: null, sizeBytes: null }, {
      housekeeping: { idleTimeoutMs: 1000, orphanSweepIntervalMs: 2000, manifestUploadIntervalMs: 1000 },
      liveTable: () => {
        const sb = h.partition.superblock;
        const known = {
          createdRevision: sb.createdRevision,
          purgeGeneration: sb.purgeGeneration,
          deletedUpToOffset: 0,
        };
        return new Map(exists ? [["1/1/0", known]] : []);
      },
    });
    h.sim.faults = { wallSkewMs: skewMs };
    await h.produce(20);
    t.ok(await h.runUntil(() => h.partition.superblock.tieredUpToOffset === h.lastSealedEnd() + 1));
    const objects = h.sim.keys().filter((k) => k.startsWith(root));
    exists = false;
    h.tier.removePartition("1/1/0");
    const deletedAtMs = h.clock.nowMs();
    const createdLastMs = Math.max(...objects.map((k) => h.sim.peek(k)!.createdAtMs));
    // 40 s of sweeps: none may delete yet (the grace is 60 s by the server's clock, whatever LastModified says).
    await h.runUntil(() => false, 4000);
    t.ok(
      objects.every((k) => h.sim.peek(k) !== undefined),
      `skew ${skewMs} ms: nothing deleted within the grace`,
    );
    t.ok(
      await h.runUntil(() => objects.every((k) => h.sim.peek(k) === undefined), 30_000),
      `skew ${skewMs} ms: every orphan swept soon after the grace`,
    );
    t.ok(
      h.clock.nowMs() - deletedAtMs >= 60_000 && h.clock.nowMs() - createdLastMs >= 60_000,
      "after the grace",
    );
    t.ok(h.clock.nowMs() - deletedAtMs < 120_000, `within two graces (${h.clock.nowMs() - deletedAtMs} ms)`);
  }
});
