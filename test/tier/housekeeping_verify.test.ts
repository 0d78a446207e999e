import t from "tap";
import { decodeManifest } from "../../src/tier/manifest.ts";
import { manifestKey, segmentKeys } from "../../src/tier/object_keys.ts";
import { incOf, metric } from "../helpers/housekeeping_fixture.ts";
import { tierHarness } from "../helpers/tier_harness.ts";

// The verify pass (and the manifests it runs beside), through the housekeeping shell on the tier
// harness.

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
