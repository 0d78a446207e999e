import t from "tap";
import {
  eligibleWatermark,
  type HousekeepingCoreConfig,
  type HousekeepingState,
  initialHousekeeping,
  type JobOutcome,
  observeChanges,
  type PartitionView,
  runFinished,
  watermarksMax,
} from "../../../src/tier/housekeeping/housekeeping_core.ts";
import { observe } from "../../helpers/housekeeping_observe.ts";
import type { PendingDeletion } from "../../../src/tier/housekeeping/housekeeping_deletes.ts";

const config: HousekeepingCoreConfig = {
  intervalMs: 300_000,
  idleTimeoutMs: 10_000,
  idleThresholdRps: 10,
  deleteGraceMs: 60_000,
  deleteBatchPerPass: 300,
  deletePendingPerPartitionMax: 5000,
  orphanSweepIntervalMs: 3_600_000,
  manifestUploadIntervalMs: 60_000,
  verifyIntervalMs: 3_600_000,
  sweepsOrphans: false,
  mergeIntervalMs: null,
};
const view = (over: Partial<PartitionView> = {}): PartitionView => ({
  key: "1/1/0",
  incarnation: "aa-0",
  floor: 0,
  deletedUpToOffset: 0,
  topicVersion: 0,
  ...over,
});

/** A listing's outcome for 1/1/0 (incarnation aa-0) that got to `listedBelow` and queued `pending`. */
const listed = (listedBelow: number, pending: PendingDeletion[] = []): JobOutcome => ({
  kind: "delete_below",
  partition: "1/1/0",
  incarnation: "aa-0",
  listedBelow,
  pending,
  failedFromOffset: null,
});

/** Observes once a second from `fromMs` to `toMs`, with `rps` requests per second; returns the runs started. */
function drive(
  state: HousekeepingState,
  fromMs: number,
  toMs: number,
  views: PartitionView[],
  rps: number,
  count = { n: 0 },
) {
  const runs: { atMs: number; jobs: unknown[] }[] = [];
  for (let now = fromMs; now <= toMs; now += 1000) {
    count.n += rps;
    const step = observe(state, { partitions: views, requestCount: count.n }, now);
    state = step.state;
    for (const e of step.effects) runs.push({ atMs: now, jobs: e.jobs });
  }
  return { state, runs };
}

t.test("objects below a watermark become deletable only delete_grace after the watermark was seen", (t) => {
  let s = initialHousekeeping(config, 0);
  s = observe(s, { partitions: [view({ deletedUpToOffset: 100 })], requestCount: 0 }, 1000).state;
  t.equal(eligibleWatermark(s.partitions.get("1/1/0")!, 60_999, 60_000), 0, "59.999 s later: not yet");
  t.equal(eligibleWatermark(s.partitions.get("1/1/0")!, 61_000, 60_000), 100, "60 s later: eligible");
  const { runs } = drive(s, 2000, 70_000, [view({ deletedUpToOffset: 100 })], 0);
  t.ok(runs.length >= 1, "an idle shard runs");
  const first = runs.find((r) => r.jobs.some((j) => (j as { kind: string }).kind === "delete_below"))!;
  t.ok(first.atMs >= 61_000, `the first delete was planned at ${first.atMs} ms, after the grace`);
  t.same(first.jobs[0], {
    kind: "delete_below",
    partition: "1/1/0",
    incarnation: "aa-0",
    fromOffset: 0,
    belowOffset: 100,
    pendingMax: 5000,
  });
  t.end();
});

t.test("a busy shard waits for the interval; an idle one runs after idle_timeout; one run at a time", (t) => {
  const views = [view({ deletedUpToOffset: 100 })];
  let s = observe(initialHousekeeping(config, 0), { partitions: views, requestCount: 0 }, 0).state;
  const busy = drive(s, 1000, 299_000, views, 50);
  t.equal(busy.runs.length, 0, "50 requests per second: no run before the interval");
  const due = drive(busy.state, 300_000, 300_000, views, 50, { n: 299 * 50 });
  t.equal(due.runs.length, 1, "the interval forces a run, busy or not");
  s = due.state;
  t.ok(s.running);
  const whileRunning = drive(s, 301_000, 700_000, views, 0);
  t.equal(whileRunning.runs.length, 0, "no second run while one is running");
  s = runFinished(whileRunning.state, { outcomes: [listed(100)] }, 700_000).state;
  t.equal(s.partitions.get("1/1/0")!.deletedBelow, 100);
  const quiet = drive(s, 701_000, 720_000, views, 0);
  t.equal(quiet.runs.length, 0, "nothing left to do: an idle shard does not run for nothing");
  const more = drive(quiet.state, 721_000, 800_000, [view({ deletedUpToOffset: 250 })], 0);
  t.same(more.runs[0]!.jobs, [{
    kind: "delete_below",
    partition: "1/1/0",
    incarnation: "aa-0",
    fromOffset: 100,
    belowOffset: 250,
    pendingMax: 5000,
  }]);
  t.ok(more.runs[0]!.atMs >= 781_000, "again only after the grace");
  t.end();
});

t.test("idle means below idle_threshold_rps for idle_timeout", (t) => {
  const views = [view({ deletedUpToOffset: 100 })];
  const s = observe(initialHousekeeping(config, 0), { partitions: views, requestCount: 0 }, 0).state;
  const count = { n: 0 };
  const busy = drive(s, 1000, 61_000, views, 10, count);
  t.equal(busy.runs.length, 0, "10 rps is at the threshold: busy");
  const calm = drive(busy.state, 62_000, 80_000, views, 9, count);
  t.equal(calm.runs[0]!.atMs, 71_000, "9 rps for 10 s: idle, and the run starts");
  t.end();
});

t.test("a purge is a new incarnation: its cursors and watermarks start over", (t) => {
  let s = initialHousekeeping(config, 0);
  s = observe(s, { partitions: [view({ deletedUpToOffset: 100, floor: 500 })], requestCount: 0 }, 0).state;
  s = { ...s, running: true };
  s = runFinished(s, { outcomes: [listed(100)] }, 1).state;
  s = observe(s, {
    partitions: [view({ incarnation: "aa-1", floor: 0, deletedUpToOffset: 0 })],
    requestCount: 0,
  }, 2)
    .state;
  t.match(s.partitions.get("1/1/0"), {
    incarnation: "aa-1",
    deletedBelow: 0,
    watermarks: [],
    manifestOf: null,
  });
  s = observe(s, { partitions: [], requestCount: 0 }, 3).state;
  t.equal(s.partitions.size, 0, "a closed partition is forgotten");
  t.end();
});

t.test("manifests when the remote set changed, at most every manifest_upload_interval; verify per interval; the sweep only on shard 0", (t) => {
  const sweeping = { ...config, sweepsOrphans: true, verifyIntervalMs: 100_000 };
  let s = initialHousekeeping(sweeping, 0);
  const { runs, state } = drive(s, 0, 20_000, [view({ floor: 10 })], 0);
  t.same(runs[0]!.jobs, [{ kind: "upload_manifest", partition: "1/1/0", describes: "10:0" }]);
  s = runFinished(
    state,
    { outcomes: [{ kind: "upload_manifest", partition: "1/1/0", describes: "10:0" }] },
    20_000,
  )
    .state;
  const changed = drive(s, 21_000, 100_000, [view({ floor: 20 })], 0);
  t.same(changed.runs[0]!.jobs, [{ kind: "upload_manifest", partition: "1/1/0", describes: "20:0" }]);
  t.equal(changed.runs[0]!.atMs, 80_000, "60 s after the previous manifest");
  s = runFinished(changed.state, {
    outcomes: [{ kind: "upload_manifest", partition: "1/1/0", describes: "20:0" }],
  }, 80_000).state;
  const later = drive(s, 101_000, 3_600_000, [view({ floor: 20 })], 0);
  t.same(
    later.runs[0]!.jobs,
    [{ kind: "verify", partition: "1/1/0", fromOffset: 0 }],
    "verify after its interval",
  );
  s = runFinished(later.state, { outcomes: [{ kind: "verify", partition: "1/1/0", nextFrom: 7 }] }, 200_000)
    .state;
  t.equal(s.partitions.get("1/1/0")!.verifyFrom, 7, "an unfinished verify goes on where it stopped");
  const sweep = drive(s, 3_600_000, 3_700_000, [view({ floor: 20 })], 0);
  t.ok(
    sweep.runs.some((r) => r.jobs.some((j) => (j as { kind: string }).kind === "orphan_sweep")),
    "the orphan sweep after its interval",
  );
  const notZero = drive(initialHousekeeping(config, 0), 0, 4_000_000, [], 0);
  t.equal(notZero.runs.length, 0, "other shards never sweep");
  t.end();
});

for (const stepMs of [2000, 250]) {
  t.test(`the watermark list stays bounded and never makes an offset eligible early (one every ${stepMs} ms)`, (t) => {
    let s = initialHousekeeping(config, 0);
    let everEligible = 0;
    const steps = watermarksMax * 6;
    for (let i = 1; i <= steps; i++) {
      const now = i * stepMs;
      s = observe(s, { partitions: [view({ deletedUpToOffset: i * 10 })], requestCount: 0 }, now).state;
      const p = s.partitions.get("1/1/0")!;
      t.ok(p.watermarks.length <= watermarksMax, "bounded");
      const eligible = eligibleWatermark(p, now, 60_000);
      // Offset o was seen at (o / 10) * stepMs: it may be eligible only 60 s after that.
      if (eligible > 0) {
        t.ok(now - (eligible / 10) * stepMs >= 60_000, `offset ${eligible} eligible at ${now}`);
      }
      everEligible = Math.max(everEligible, eligible);
    }
    t.ok(everEligible > 0, `offsets do become eligible (up to ${everEligible} of ${steps * 10})`);
    t.end();
  });
}

t.test("an idle shard's observations plan nothing until a job can be due, then plan at that time", (t) => {
  let s = initialHousekeeping(config, 0);
  const tiered = view({ floor: 10 });
  // The first plan, once idle, uploads the manifest; the verify pass waits its interval.
  const first = drive(s, 0, 11_000, [tiered], 0);
  t.same(first.runs.map((r) => r.jobs.map((j) => (j as { kind: string }).kind)), [["upload_manifest"]]);
  s = runFinished(first.state, {
    outcomes: [{ kind: "upload_manifest", partition: "1/1/0", describes: "10:0" }],
  }, 11_000).state;
  t.equal(s.planAtMs, 11_000, "a run's end plans again");
  const verifyDueMs = s.partitions.get("1/1/0")!.verifiedAtMs + config.verifyIntervalMs;
  let runsAtMs: number[] = [];
  for (let now = 12_000; now <= verifyDueMs; now += 1000) {
    const step = observeChanges(s, { changed: [], removed: [], requestCount: 0 }, now);
    s = step.state;
    if (step.effects.length > 0) runsAtMs.push(now);
    // Idle again 10 s after the run: that observation's plan finds nothing and looks ahead.
    if (now === 21_000) {
      t.equal(s.planAtMs, verifyDueMs, "nothing to do: no plan before the verify pass is due");
    }
  }
  t.same(runsAtMs, [verifyDueMs], "the verify pass runs when it is due, and nothing before it");
  s = runFinished(s, { outcomes: [] }, verifyDueMs).state;
  runsAtMs = [];
  const moved = observeChanges(
    s,
    { changed: [view({ floor: 20 })], removed: [], requestCount: 0 },
    verifyDueMs + 1000,
  );
  t.equal(moved.state.planAtMs, verifyDueMs + 1000, "a partition that moved is planned for at once");
  const gone = observeChanges(s, { changed: [], removed: ["1/1/0"], requestCount: 0 }, verifyDueMs + 1000);
  t.equal(gone.state.partitions.size, 0, "a partition that left is forgotten");
  t.end();
});

t.test("merges run only in idle runs; a merge that found work comes again at once, one that found none after merge_interval", (t) => {
  const merging = { ...config, mergeIntervalMs: 60_000 };
  const views = [view()];
  let s = observe(initialHousekeeping(merging, 0), { partitions: views, requestCount: 0 }, 0).state;
  const busy = drive(s, 1000, 300_000, views, 50);
  t.equal(busy.runs.length, 0, "a busy shard with nothing else to do does not run to merge");
  const idle = drive(s, 1000, 20_000, views, 0);
  t.same(idle.runs[0]!.jobs, [{ kind: "merge" }], "an idle shard merges");
  t.equal(idle.runs[0]!.atMs, 10_000);
  s =
    runFinished(idle.state, { outcomes: [{ kind: "merge", more: true, partition: "1/1/0" }] }, 20_000).state;
  const again = drive(s, 21_000, 40_000, views, 0);
  t.equal(again.runs[0]!.atMs, 21_000, "work found: the next idle run merges again");
  s = runFinished(again.state, { outcomes: [{ kind: "merge", more: false, partition: null }] }, 40_000).state;
  const later = drive(s, 41_000, 200_000, views, 0);
  t.equal(later.runs[0]!.atMs, 100_000, "none found: not before merge_interval");
  const off = drive(
    observe(initialHousekeeping(config, 0), { partitions: views, requestCount: 0 }, 0).state,
    1000,
    600_000,
    views,
    0,
  );
  t.same(off.runs, [], "with the merger off, an idle shard with nothing to do does not run");
  const forced = drive(
    observe(initialHousekeeping(merging, 0), {
      partitions: [view({ deletedUpToOffset: 100 })],
      requestCount: 0,
    }, 0).state,
    1000,
    300_000,
    [view({ deletedUpToOffset: 100 })],
    50,
  );
  t.same(
    forced.runs[0]!.jobs.map((j) => (j as { kind: string }).kind),
    ["delete_below"],
    "a run the interval forces on a busy shard does not merge",
  );
  t.end();
});

t.test("a merge puts the partition's manifest out of date: it goes up again", (t) => {
  const merging = { ...config, mergeIntervalMs: 60_000 };
  const views = [view({ floor: 100 })];
  const s = observe(initialHousekeeping(merging, 0), { partitions: views, requestCount: 0 }, 0).state;
  const first = drive(s, 1000, 20_000, views, 0);
  t.same(first.runs[0]!.jobs.map((j) => (j as { kind: string }).kind), ["upload_manifest", "merge"]);
  const uploaded: JobOutcome = { kind: "upload_manifest", partition: "1/1/0", describes: "100:0" };
  const quiet = runFinished(first.state, {
    outcomes: [uploaded, { kind: "merge", more: false, partition: null }],
  }, 10_000);
  t.same(drive(quiet.state, 11_000, 69_000, views, 0).runs, [], "nothing to do until merge_interval");
  const merged = runFinished(first.state, {
    outcomes: [uploaded, { kind: "merge", more: true, partition: "1/1/0" }],
  }, 10_000);
  const next = drive(merged.state, 11_000, 90_000, views, 0);
  t.same(
    next.runs.map((r) => r.jobs.map((j) => (j as { kind: string }).kind)),
    [["merge"]],
    "the next merge at once",
  );
  const after = runFinished(
    next.state,
    { outcomes: [{ kind: "merge", more: false, partition: null }] },
    21_000,
  );
  const manifest = drive(after.state, 22_000, 90_000, views, 0);
  t.same(manifest.runs[0]!.jobs, [{ kind: "upload_manifest", partition: "1/1/0", describes: "100:0" }]);
  t.equal(manifest.runs[0]!.atMs, 70_000, "after manifest_upload_interval");
  t.end();
});
