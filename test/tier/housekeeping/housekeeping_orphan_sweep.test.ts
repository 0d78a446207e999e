import t from "tap";
import type {
  DeadlineListOptions,
  DeadlineObjectStore,
} from "../../../src/objectstore/retrying_object_store.ts";
import { SimObjectStore } from "../../../src/objectstore/sim_object_store.ts";
import { createMetricsRegistry } from "../../../src/runtime/metrics/metrics.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { RequestBudget } from "../../../src/tier/housekeeping/housekeeping_budget.ts";
import { HousekeepingMetrics } from "../../../src/tier/housekeeping/housekeeping_metrics.ts";
import { OrphanSweep } from "../../../src/tier/housekeeping/housekeeping_orphan_sweep.ts";
import {
  deadMarkKey,
  incarnationPrefix,
  manifestKey,
  type PartitionIncarnation,
  segmentKeys,
} from "../../../src/tier/bucket/object_keys.ts";
import { incOf, metric, root } from "../../helpers/housekeeping_fixture.ts";
import { tierHarness } from "../../helpers/tier_harness.ts";
import { passTime, waitFor } from "../../helpers/wait_for.ts";

// The orphan sweep: first on its own over the sim store, then through the housekeeping shell on
// the tier harness.

/** Partition 1/1/0 lives under revision a1, generation 1. */
const live = incOf("a1", 1);
const stale = incOf("a1", 0);
const deleted: PartitionIncarnation = { ...incOf("b2", 0), streamId: 2 };
const liveTable = () =>
  new Map([["1/1/0", { createdRevision: "a1", purgeGeneration: 1, deletedUpToOffset: 0 }]]);

async function putObject(sim: SimObjectStore, key: string): Promise<void> {
  await sim.put(key, async function* () {
    yield new Uint8Array(1);
  }, { sizeBytes: 1, metadata: {}, ifAbsent: true });
}

/** A sweep over a store of `liveSegments` live segments, one stale and one deleted, and a stray key. */
async function setup(liveSegments = 2) {
  const clock = new VirtualClock();
  const sim = new SimObjectStore(clock, new Rng(1));
  for (let i = 0; i < liveSegments; i++) await putObject(sim, segmentKeys(live, i * 10, null).log);
  const orphans = [
    segmentKeys(stale, 0, null).log,
    segmentKeys(stale, 0, null).index,
    segmentKeys(deleted, 0, null).log,
  ];
  for (const key of orphans) await putObject(sim, key);
  await putObject(sim, `${root}stray-file`);
  const listings: (string | undefined)[] = [];
  const store: DeadlineObjectStore = {
    put: (key, body, options) => sim.put(key, body, options),
    getRange: (key, start, endExclusive) => sim.getRange(key, start, endExclusive),
    streamRange: (key, start, endExclusive, sink) => sim.streamRange(key, start, endExclusive, sink),
    head: (key) => sim.head(key),
    list: (prefix, options?: DeadlineListOptions) => {
      listings.push(options?.startAfter);
      return sim.list(prefix, options);
    },
    delete: (keys) => sim.delete(keys),
  };
  const registry = createMetricsRegistry();
  const sweep = new OrphanSweep({
    store,
    clock,
    config: { prefix: "strata", clusterId: "c1", deleteGraceMs: 60_000 },
    incarnations: { incarnationTable: liveTable },
    metrics: new HousekeepingMetrics(registry),
  });
  return { clock, sim, sweep, orphans, listings, registry };
}

t.test("orphans are deleted only once sweeps a grace apart found them; live and stray keys are kept", async (t) => {
  const { clock, sim, sweep, orphans, registry } = await setup();
  const present = () => sim.keys().length;
  const marks = [deadMarkKey(stale), deadMarkKey(deleted)];
  t.same(await sweep.run(null, new RequestBudget(10, undefined)), { kind: "orphan_sweep", nextAfter: null });
  t.equal(present(), 8, "the first sweep only notes what it found, and marks both incarnations dead");
  t.ok(marks.every((k) => sim.peek(k) !== undefined), "a dead mark for each dead incarnation");
  t.equal(await metric(registry, /strata_housekeeping_orphans_found_total (\d+)/), 3);
  clock.advance(30_000);
  await sweep.run(null, new RequestBudget(10, undefined));
  t.equal(present(), 8, "half a grace later, nothing yet");
  clock.advance(30_000);
  await sweep.run(null, new RequestBudget(10, undefined));
  t.ok(
    orphans.every((k) => sim.peek(k) === undefined),
    "a grace after they were first found, the orphans go",
  );
  t.ok(marks.every((k) => sim.peek(k) !== undefined), "the dead marks outlive the data they mark");
  t.equal(await metric(registry, /strata_housekeeping_deleted_objects_total\{reason="orphan"\} (\d+)/), 3);
  clock.advance(30_000);
  await sweep.run(null, new RequestBudget(10, undefined));
  t.same(
    sim.keys(),
    [
      `${root}1/1/0/a1-1/00000000000000000000.log`,
      `${root}1/1/0/a1-1/00000000000000000010.log`,
      `${root}stray-file`,
    ].sort(),
    "a grace after the marks were first listed, with none of their data left, they go too",
  );
  t.equal(await metric(registry, /strata_housekeeping_deleted_objects_total\{reason="orphan"\} (\d+)/), 5);
});

t.test("nothing of a dead incarnation is deleted until its dead mark is stored", async (t) => {
  const { clock, sim, sweep, orphans } = await setup();
  let refusing = true;
  const put = sim.put.bind(sim);
  sim.put = (key, body, options) =>
    refusing && key === deadMarkKey(stale) ? Promise.reject(new Error("refused")) : put(key, body, options);
  for (let i = 0; i < 4; i++) {
    await t.rejects(
      sweep.run(null, new RequestBudget(10, undefined)),
      /refused/,
      "the sweep fails at the mark",
    );
    clock.advance(60_000);
  }
  t.ok(orphans.every((k) => sim.peek(k) !== undefined), "four graces on, nothing was deleted");
  t.equal(sim.peek(deadMarkKey(stale)), undefined);
  refusing = false;
  for (let i = 0; i < 4; i++) {
    await sweep.run(null, new RequestBudget(10, undefined));
    clock.advance(60_000);
  }
  t.ok(
    [...orphans, deadMarkKey(stale), deadMarkKey(deleted)].every((k) => sim.peek(k) === undefined),
    "all of it goes once the store takes the mark",
  );
});

t.test("a dead mark stays while its incarnation's data does", async (t) => {
  const { clock, sim, sweep } = await setup();
  const stuck = segmentKeys(deleted, 0, null).log;
  let refusing = true;
  const remove = sim.delete.bind(sim);
  sim.delete = async (keys) => {
    const kept = refusing ? keys.filter((k) => k === stuck) : [];
    const results = await remove(keys.filter((k) => !kept.includes(k)));
    return [...results, ...kept.map((key) => ({ key, error: new Error("refused") }))];
  };
  for (let i = 0; i < 4; i++) {
    await sweep.run(null, new RequestBudget(10, undefined));
    clock.advance(60_000);
  }
  t.ok(sim.peek(stuck) !== undefined, "the object whose delete fails is left");
  t.ok(sim.peek(deadMarkKey(deleted)) !== undefined, "so its incarnation's dead mark stays");
  t.equal(sim.peek(deadMarkKey(stale)), undefined, "the other incarnation's went after its data");
  refusing = false;
  for (let i = 0; i < 3; i++) {
    await sweep.run(null, new RequestBudget(10, undefined));
    clock.advance(60_000);
  }
  t.equal(sim.peek(stuck), undefined);
  t.equal(sim.peek(deadMarkKey(deleted)), undefined, "the mark goes in a sweep after its last data");
});

t.test("a page that ends inside a live incarnation skips the rest of it; a spent budget resumes where it stopped", async (t) => {
  const { clock, sim, sweep, orphans, listings } = await setup(1001);
  const skip = `${incarnationPrefix(live)}~`;
  t.same(
    await sweep.run(null, new RequestBudget(2, undefined)),
    { kind: "orphan_sweep", nextAfter: skip },
    "one page of live keys, then the budget ran out: the next run starts after the live incarnation",
  );
  clock.advance(60_000);
  t.same(await sweep.run(skip, new RequestBudget(10, undefined)), { kind: "orphan_sweep", nextAfter: null });
  t.same(listings, [undefined, skip], "the live incarnation's last key was never listed");
  t.ok(
    orphans.every((k) => sim.peek(k) !== undefined),
    "none deleted yet: the resumed pass did not list the stale ones again and found the other just now",
  );
  clock.advance(60_000);
  await sweep.run(null, new RequestBudget(10, undefined));
  t.ok(
    sim.peek(segmentKeys(deleted, 0, null).log) === undefined,
    "the deleted incarnation's orphan goes with the next sweep",
  );
  t.ok(
    sim.peek(segmentKeys(stale, 0, null).log) !== undefined && sim.peek(deadMarkKey(stale)) !== undefined,
    "the stale one, found first by a run without room for its dead mark, is marked now and goes later",
  );
  clock.advance(60_000);
  await sweep.run(null, new RequestBudget(10, undefined));
  t.ok(orphans.every((k) => sim.peek(k) === undefined), "deleted by the sweep after");
});

t.test("purge during an upload: it lands under the old generation, its floor is rejected, the orphan sweep deletes it after the grace", async (t) => {
  const h = await tierHarness(t, { ageMs: null, sizeBytes: null }, {
    housekeeping: { idleTimeoutMs: 1000, orphanSweepIntervalMs: 5000 },
  });
  h.sim.faults = { latencyMs: { min: 2000, max: 2000 } };
  await h.produce(6);
  await waitFor("an upload in flight", () => h.tier.uploadsInFlight() > 0, h.ticks());
  const revision = h.partition.superblock.createdRevision;
  await h.partition.purge();
  h.tier.purged("1/1/0");
  t.equal(h.partition.superblock.purgeGeneration, 1);
  const oldKeys = segmentKeys(incOf(revision, 0), 0, null);
  await waitFor(
    "the upload to land under the old generation's prefix",
    () => h.tier.uploadsInFlight() === 0 && h.sim.peek(oldKeys.index) !== undefined,
    h.ticks(),
  );
  t.ok(h.sim.peek(oldKeys.log), "the upload landed under the old generation's prefix");
  t.equal(
    h.partition.superblock.tieredUpToOffset,
    0,
    "its floor command did not move the new generation's floor",
  );

  h.sim.faults = {};
  await h.produce(12);
  const newKeys = segmentKeys(incOf(revision, 1), 0, null);
  await waitFor("the new generation to upload", () => h.sim.peek(newKeys.log) !== undefined, h.ticks());
  const purgedAtMs = h.clock.nowMs();
  await waitFor(
    "the orphan sweep to delete the old objects",
    () => h.sim.peek(oldKeys.log) === undefined,
    h.ticks(300_000),
  );
  t.equal(h.sim.peek(oldKeys.index), undefined);
  t.ok(h.clock.nowMs() - purgedAtMs >= 60_000, "not before the grace");
  t.ok(h.sim.peek(newKeys.log), "the live generation's objects are kept");
  t.ok(await metric(h.registry, /strata_housekeeping_deleted_objects_total\{reason="orphan"\} (\d+)/) >= 2);
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
  await waitFor(
    "the upload of every sealed segment",
    () => h.partition.superblock.tieredUpToOffset === h.lastSealedEnd() + 1,
    h.ticks(),
  );
  const inc = incOf(h.partition.superblock.createdRevision, 0);
  await waitFor("a manifest to go up", () => h.sim.peek(manifestKey(inc)) !== undefined, h.ticks());
  const objects = h.sim.keys().filter((k) => k.startsWith(root));
  t.ok(objects.length >= 7, `${objects.length} objects, manifest included`);
  const sweptBefore = h.housekeeping!.state.sweptAtMs;
  await passTime(10_000, h.ticks().pace); // 10 s: sweeps run while the topic exists
  t.ok(h.housekeeping!.state.sweptAtMs > sweptBefore, "the sweep ran meanwhile");
  t.ok(objects.every((k) => h.sim.peek(k) !== undefined), "a live incarnation is never swept");

  exists = false; // the topic is deleted: its partition leaves the metadata
  h.tier.removePartition("1/1/0");
  const deletedAtMs = h.clock.nowMs();
  await waitFor(
    "the sweep to mark the incarnation dead",
    () => h.sim.peek(deadMarkKey(inc)) !== undefined,
    h.ticks(300_000),
  );
  await waitFor(
    "every object swept, its dead mark last",
    () => [...objects, deadMarkKey(inc)].every((k) => h.sim.peek(k) === undefined),
    h.ticks(600_000),
  );
  t.ok(h.clock.nowMs() - deletedAtMs >= 60_000, "after the grace");
  t.ok(await metric(h.registry, /strata_housekeeping_orphans_found_total (\d+)/) >= objects.length);
  t.equal(
    await metric(h.registry, /strata_housekeeping_deleted_objects_total\{reason="orphan"\} (\d+)/),
    objects.length + 1,
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
    await waitFor(
      "the upload of every sealed segment",
      () => h.partition.superblock.tieredUpToOffset === h.lastSealedEnd() + 1,
      h.ticks(),
    );
    const objects = h.sim.keys().filter((k) => k.startsWith(root));
    exists = false;
    h.tier.removePartition("1/1/0");
    const deletedAtMs = h.clock.nowMs();
    const createdLastMs = Math.max(...objects.map((k) => h.sim.peek(k)!.createdAtMs));
    // 40 s of sweeps: none may delete yet (the grace is 60 s of the server's clock, whatever LastModified says).
    await passTime(40_000, h.ticks().pace);
    t.ok(
      objects.every((k) => h.sim.peek(k) !== undefined),
      `skew ${skewMs} ms: nothing deleted within the grace`,
    );
    await waitFor(
      "every orphan swept after the grace",
      () => objects.every((k) => h.sim.peek(k) === undefined),
      h.ticks(300_000),
    );
    t.ok(
      h.clock.nowMs() - deletedAtMs >= 60_000 && h.clock.nowMs() - createdLastMs >= 60_000,
      "after the grace",
    );
    t.ok(h.clock.nowMs() - deletedAtMs < 120_000, `within two graces (${h.clock.nowMs() - deletedAtMs} ms)`);
  }
});

t.test("in a cluster only the controller's node sweeps: no sweep while it is not, one soon after it becomes it", async (t) => {
  let controller = false;
  let exists = true;
  const h = await tierHarness(t, { ageMs: null, sizeBytes: null }, {
    housekeeping: { idleTimeoutMs: 1000, orphanSweepIntervalMs: 2000 },
    sweepsOrphans: () => controller,
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
  await waitFor(
    "the upload of every sealed segment",
    () => h.partition.superblock.tieredUpToOffset === h.lastSealedEnd() + 1,
    h.ticks(),
  );
  const objects = h.sim.keys().filter((k) => k.startsWith(root));
  exists = false;
  h.tier.removePartition("1/1/0");
  const sweptBefore = h.housekeeping!.state.sweptAtMs;
  await passTime(150_000, h.ticks().pace); // 150 s: past the grace, many sweep intervals
  t.equal(h.housekeeping!.state.sweptAtMs, sweptBefore, "no sweep while another node controls");
  t.ok(objects.every((k) => h.sim.peek(k) !== undefined), "nothing deleted");
  controller = true;
  const becameMs = h.clock.nowMs();
  await waitFor(
    "every orphan swept once this node controls",
    () => objects.every((k) => h.sim.peek(k) === undefined),
    h.ticks(300_000),
  );
  t.ok(h.housekeeping!.state.sweptAtMs >= becameMs, "by a sweep of its own");
});
