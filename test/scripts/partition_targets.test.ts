import t from "tap";
import { judgePartitionTargets, missedTargets } from "../../scripts/lib/partition_targets.ts";

const met = {
  idleCpuPercentOfCore: 1.5,
  idleTickP99Ms: 1.4,
  idleTickMaxMs: 2.9,
  baselineTickP99Ms: 0.5,
  baselineTickMaxMs: 2,
  createTopicTickMaxMs: 10,
  bootAfterKillMs: 4000,
  openFds: 1100,
  maxOpenFiles: 1000,
};

t.test("judgePartitionTargets meets each target at its limit and misses it just past", (t) => {
  const results = judgePartitionTargets(met);
  t.same(results.map((r) => r.pass), [true, true, true, true, true, true]);
  t.same(results.map((r) => r.limit), [2, 1.5, 3, 10, 5000, 1128]);
  const missed = judgePartitionTargets({
    ...met,
    idleCpuPercentOfCore: 2.01,
    idleTickP99Ms: 1.51,
    idleTickMaxMs: 3.01,
    createTopicTickMaxMs: 10.01,
    bootAfterKillMs: 5001,
    openFds: 1129,
  });
  t.same(missed.map((r) => r.pass), [false, false, false, false, false, false]);
  t.equal(missedTargets(missed).length, 6);
  t.end();
});

// Without the setting the descriptor bound has nothing to stand on: reported, not judged, not missed.
t.test("the descriptor target is unjudged without max_open_files", (t) => {
  const results = judgePartitionTargets({ ...met, maxOpenFiles: null, openFds: 99_999 });
  t.same(results.at(-1), { name: "open descriptors", limit: null, measured: 99_999, pass: null });
  t.same(missedTargets(results), []);
  t.end();
});
