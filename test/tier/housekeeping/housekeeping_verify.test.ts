import t from "tap";
import { crc32 } from "../../../src/runtime/checksum/crc32.ts";
import { decodeManifest } from "../../../src/tier/bucket/manifest.ts";
import { manifestKey, segmentKeys } from "../../../src/tier/bucket/object_keys.ts";
import { incOf, metric } from "../../helpers/housekeeping_fixture.ts";
import { tierHarness } from "../../helpers/tier_harness.ts";
import { waitFor } from "../../helpers/wait_for.ts";

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
  await waitFor("the upload and eviction down to the envelope", evictedToEnvelope, h.ticks());
  const inc = incOf(h.partition.superblock.createdRevision, 0);
  const floor = h.partition.superblock.tieredUpToOffset;
  const remote = h.partition.log.segments.find((s) => s.location === "remote")!;
  const local = h.partition.log.segments.find((s) => s.sealed && s.location !== "remote")!;
  t.ok(local.endOffset < floor, "a segment below the floor whose .log is still local");
  const lost = segmentKeys(inc, remote.startOffset, null).log;
  const healable = segmentKeys(inc, local.startOffset, null).log;
  await h.sim.delete([lost, healable]);

  const anomalies = () => metric(h.registry, /strata_tier_verify_anomalies_total\{kind="missing"\} (\d+)/);
  const reuploads = () => metric(h.registry, /strata_tier_verify_reuploads_total (\d+)/);
  let seen = [0, 0];
  // One read of the metrics at a time: a render per tick would pile up under load and starve the pass.
  let reading = false;
  await waitFor("the verify pass", () => {
    if (!reading) {
      reading = true;
      void Promise.all([anomalies(), reuploads()]).then((n) => {
        seen = n;
        reading = false;
      });
    }
    return seen[0]! >= 1 && seen[1]! >= 1;
    // The pass is due 20 s of virtual time after the first look (about 2,000 ticks).
  }, h.ticks(100_000));
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
  await waitFor(
    "a manifest of this floor",
    () => manifestNow()?.tieredUpToOffset === floor,
    h.ticks(400_000),
  );
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

t.test("the verify pass reports an object of another size, and one of the same size with another CRC32, as mismatches it neither re-uploads nor hides", async (t) => {
  const envelopeBytes = 120_000;
  const h = await tierHarness(t, { ageMs: null, sizeBytes: envelopeBytes }, {
    housekeeping: { idleTimeoutMs: 1000, verifyIntervalMs: 20_000 },
  });
  await h.produce(40);
  const evictedToEnvelope = () =>
    h.partition.superblock.tieredUpToOffset === h.lastSealedEnd() + 1 &&
    h.partition.log.segments.filter((s) => s.location === "remote").length >= 2 &&
    h.partition.log.localSizeBytes <= envelopeBytes;
  await waitFor("the upload and eviction down to the envelope", evictedToEnvelope, h.ticks());
  const inc = incOf(h.partition.superblock.createdRevision, 0);
  const floor = h.partition.superblock.tieredUpToOffset;
  const [shorter, altered] = h.partition.log.segments.filter((s) => s.location === "remote");
  const shorterKey = segmentKeys(inc, shorter!.startOffset, null).log;
  const alteredKey = segmentKeys(inc, altered!.startOffset, null).log;
  // Two objects no longer match their segment's marker, each in one way only: one is 100 bytes
  // short under the metadata of the original (its CRC32 as recorded), the other keeps its size
  // but has one byte flipped and that body's CRC32 in its metadata.
  const replace = async (key: string, bytes: Uint8Array, crc32Text: string) => {
    await h.sim.put(key, async function* () {
      yield bytes;
    }, {
      sizeBytes: bytes.length,
      metadata: { ...h.sim.peek(key)!.metadata, crc32: crc32Text },
      ifAbsent: false,
    });
  };
  const shorterBytes = h.sim.peek(shorterKey)!.bytes.slice(0, -100);
  const alteredBytes = h.sim.peek(alteredKey)!.bytes.slice();
  alteredBytes[alteredBytes.length - 5000]! ^= 0x40;
  await replace(shorterKey, shorterBytes, String(shorter!.marker!.logCrc32));
  await replace(alteredKey, alteredBytes, String(crc32(alteredBytes)));
  t.equal(h.sim.peek(shorterKey)!.metadata["crc32"], String(shorter!.marker!.logCrc32), "short, same CRC32");
  t.equal(h.sim.peek(alteredKey)!.bytes.length, altered!.sizeBytes, "the altered object keeps its size");
  t.not(h.sim.peek(alteredKey)!.metadata["crc32"], String(altered!.marker!.logCrc32), "but not its CRC32");

  const mismatches = () => metric(h.registry, /strata_tier_verify_anomalies_total\{kind="mismatch"\} (\d+)/);
  // Each pass reports again what it finds: stop after the first pass has looked at both segments
  // (in offset order, so once it has HEADed the later one's .index).
  const laterIndexKey = segmentKeys(inc, altered!.startOffset, null).index;
  const headsBefore = { index: h.sim.count("head", laterIndexKey), log: h.sim.count("head", alteredKey) };
  t.ok(
    // The pass is due 20 s of virtual time after the first look (about 2,000 ticks).
    await waitFor(
      "the verify pass to look at both segments",
      () => h.sim.count("head", laterIndexKey) > headsBefore.index,
      h.ticks(100_000),
    ),
    "the verify pass looked at both segments",
  );
  t.equal(h.sim.count("head", alteredKey), headsBefore.log + 1, "in one pass");
  t.equal(await mismatches(), 2, "the size and the CRC32 mismatch, each reported once");
  t.equal(await metric(h.registry, /strata_tier_verify_anomalies_total\{kind="missing"\} (\d+)/), 0);
  t.equal(await metric(h.registry, /strata_tier_verify_reuploads_total (\d+)/), 0, "nothing re-uploaded");
  t.same(h.sim.peek(shorterKey)!.bytes, shorterBytes, "the short object is left as found");
  t.same(h.sim.peek(alteredKey)!.bytes, alteredBytes, "the altered object is left as found");
  t.equal(h.partition.superblock.tieredUpToOffset, floor, "the floor does not move to hide them");
});
