import t from "tap";
import { manifestKey } from "../../../src/tier/bucket/object_keys.ts";
import { incOf, metric } from "../../helpers/housekeeping_fixture.ts";
import { tierHarness } from "../../helpers/tier_harness.ts";
import { passTime, waitFor } from "../../helpers/wait_for.ts";

// The housekeeping shell: how it runs the jobs the core plans. Each job has its own tests
// (housekeeping_deletes, housekeeping_manifests, housekeeping_verify, housekeeping_orphan_sweep).

t.test("a job that fails is counted, the run's other jobs still go, and it runs again in a later run", async (t) => {
  const h = await tierHarness(t, { ageMs: null, sizeBytes: null }, {
    housekeeping: { idleTimeoutMs: 1000, orphanSweepIntervalMs: 2000, manifestUploadIntervalMs: 1000 },
  });
  await h.produce(20);
  await waitFor(
    "the upload of every sealed segment",
    () => h.partition.superblock.tieredUpToOffset === h.lastSealedEnd() + 1,
    h.ticks(),
  );
  // Every listing is refused (a 403 is never retried): the orphan sweep fails, the manifest upload does not.
  h.sim.faults = { errorRates: { list: { auth: 1 } } };
  const sweptBefore = h.housekeeping!.state.sweptAtMs;
  const failures = () => metric(h.registry, /strata_housekeeping_failures_total\{job="orphan_sweep"\} (\d+)/);
  let failed = 0;
  // One read of the metrics at a time, as the verify pass's test does.
  let reading = false;
  const manifest = manifestKey(incOf(h.partition.superblock.createdRevision, 0));
  await waitFor("the sweep to fail and the manifest to go up", () => {
    if (!reading) {
      reading = true;
      void failures().then((n) => {
        failed = n;
        reading = false;
      });
    }
    return failed >= 1 && h.sim.peek(manifest) !== undefined;
  }, h.ticks(100_000));
  t.equal(h.housekeeping!.state.sweptAtMs, sweptBefore, "a failed sweep is not taken for a finished one");

  h.sim.faults = {};
  await waitFor(
    "a later run to sweep",
    () => h.housekeeping!.state.sweptAtMs > sweptBefore,
    h.ticks(100_000),
  );
});

t.test("stop ends the run in progress after its request in flight, and no run starts after it", async (t) => {
  const h = await tierHarness(t, { ageMs: null, sizeBytes: null }, {
    housekeeping: { idleTimeoutMs: 1000, orphanSweepIntervalMs: 2000 },
  });
  await h.produce(20);
  await waitFor(
    "the upload of every sealed segment",
    () => h.partition.superblock.tieredUpToOffset === h.lastSealedEnd() + 1,
    h.ticks(),
  );
  // Each request now takes 2 s of virtual time, so that a run is seen in progress.
  h.sim.faults = { latencyMs: { min: 2000, max: 2000 } };
  await waitFor("a run to be in progress", () => h.housekeeping!.state.running, h.ticks());
  const requestsAtStop = h.sim.records.length;
  let stopped = false;
  void h.housekeeping!.stop().then(() => stopped = true);
  await waitFor("stop to resolve", () => stopped, h.ticks());
  t.notOk(h.housekeeping!.state.running, "once the run had ended");
  t.ok(h.sim.records.length <= requestsAtStop + 1, "after the request in flight at most");
  const runs = () => metric(h.registry, /strata_housekeeping_runs_total (\d+)/);
  const runsAtStop = await runs();
  // 20 s of virtual time: with a 1 s idle timeout and a 2 s sweep interval, runs would be due many times over.
  await passTime(20_000, h.ticks().pace);
  t.equal(await runs(), runsAtStop, "no run started after stop");
});
