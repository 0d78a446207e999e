import t from "tap";
import { RequestBudget } from "../../src/tier/housekeeping_budget.ts";
import { uploadManifest } from "../../src/tier/housekeeping_manifests.ts";
import { decodeManifest, manifestOf } from "../../src/tier/manifest.ts";
import { manifestKey } from "../../src/tier/object_keys.ts";
import { incOf } from "../helpers/housekeeping_fixture.ts";
import { tierHarness } from "../helpers/tier_harness.ts";

// The manifest job on its own, over the tier harness's partition and store. The verify pass's
// test follows manifests through the housekeeping shell.

t.test("the manifest of the partition as it is now goes up in one request, and the job says what it describes", async (t) => {
  const h = await tierHarness(t, { ageMs: null, sizeBytes: null });
  await h.produce(20);
  t.ok(await h.runUntil(() => h.partition.superblock.tieredUpToOffset === h.lastSealedEnd() + 1), "uploaded");
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
