import t from "tap";
import {
  type HousekeepingJob,
  type HousekeepingState,
  initialHousekeeping,
  type JobOutcome,
  runFinished,
} from "../../../src/tier/housekeeping/housekeeping_core.ts";
import { observe } from "../../helpers/housekeeping_observe.ts";
import {
  type PendingDeletion,
  settleDeletions,
} from "../../../src/tier/housekeeping/housekeeping_deletes.ts";

// A partition's queue of pending deletions, capped at delete_pending_per_partition: first the
// settling on its own, then the core planning and settling runs over a store modelled as a sorted
// key list, where the listing queues what it finds beyond its batch.

const pendingMax = 5;
const config = {
  intervalMs: 300_000,
  idleTimeoutMs: 10_000,
  idleThresholdRps: 10,
  deleteGraceMs: 60_000,
  deleteBatchPerPass: 2,
  deletePendingPerPartitionMax: pendingMax,
  orphanSweepIntervalMs: 3_600_000,
  manifestUploadIntervalMs: 60_000,
  verifyIntervalMs: 3_600_000,
  sweepsOrphans: false,
  mergeIntervalMs: null,
};
const view = { key: "1/1/0", incarnation: "aa-0", floor: 0, deletedUpToOffset: 100, topicVersion: 0 };

/** The `.index` and `.log` of segments starting at 0, 10, ..., 90, in key order. */
const objectsBelow100: PendingDeletion[] = Array.from({ length: 10 }, (_, i) => i * 10).flatMap((start) => [
  { key: `seg-${String(start).padStart(3, "0")}.index`, startOffset: start },
  { key: `seg-${String(start).padStart(3, "0")}.log`, startOffset: start },
]);

t.test("past the cap the queue is cut at a segment boundary and the listing cursor stays below the cut", (t) => {
  const empty = { deletedBelow: 0, listedBelow: 0, pending: [] };
  const settled = settleDeletions(empty, {
    listedBelow: 60,
    pending: objectsBelow100.slice(0, 11), // 0 through 50.index
    takenFromQueue: 0,
    failedFromOffset: null,
  }, pendingMax);
  t.same(settled.pending.map((p) => p.key), ["seg-000.index", "seg-000.log", "seg-010.index", "seg-010.log"]);
  t.equal(settled.listedBelow, 20, "segment 20 and after are listed again");
  t.equal(settled.deletedBelow, 0);

  const failed = settleDeletions(settled, {
    listedBelow: null,
    pending: [],
    takenFromQueue: 2,
    failedFromOffset: 0,
  }, 5);
  t.same(failed, { deletedBelow: 0, listedBelow: 0, pending: [] }, "a failed delete lists its segment again");

  const split = settleDeletions(empty, {
    listedBelow: 10, // stopped at 10.log, younger than the grace
    pending: objectsBelow100.slice(1, 3),
    takenFromQueue: 0,
    failedFromOffset: null,
  }, pendingMax);
  t.same(
    split.pending.map((p) => p.key),
    ["seg-000.log"],
    "10.index waits for the listing that finds 10.log",
  );
  t.equal(split.deletedBelow, 0);
  t.end();
});

/** One listing job over `store`, as the shell does it: delete a batch, report the rest up to one past the cap. */
function list(store: PendingDeletion[], job: Extract<HousekeepingJob, { kind: "delete_below" }>) {
  const found = store.filter((o) => o.startOffset >= job.fromOffset && o.startOffset < job.belowOffset)
    .slice(0, config.deleteBatchPerPass + job.pendingMax + 2);
  const collected = found.slice(0, config.deleteBatchPerPass + job.pendingMax + 1);
  const listedBelow = found.length > collected.length ? found.at(-1)!.startOffset : job.belowOffset;
  const doomed = collected.slice(0, config.deleteBatchPerPass);
  const outcome: JobOutcome = {
    kind: "delete_below",
    partition: job.partition,
    incarnation: job.incarnation,
    listedBelow,
    pending: collected.slice(config.deleteBatchPerPass),
    failedFromOffset: null,
  };
  return { doomed, outcome };
}

t.test("a partition queues at most delete_pending_per_partition keys, and every object below the watermark is deleted in the end", (t) => {
  let store = [...objectsBelow100];
  let s: HousekeepingState = initialHousekeeping(config, 0);
  s = observe(s, { partitions: [view], requestCount: 0 }, 0).state; // the watermark is seen
  let listings = 0;
  let nowMs = 0;
  for (let run = 0; run < 40 && store.length > 0; run++) {
    nowMs += 61_000;
    const step = observe(s, { partitions: [view], requestCount: 0 }, nowMs);
    s = step.state;
    t.equal(step.effects.length, 1, `run ${run} started`);
    const outcomes: JobOutcome[] = [];
    for (const job of step.effects[0]!.jobs) {
      let doomed: readonly PendingDeletion[];
      if (job.kind === "delete_below") {
        t.equal(job.pendingMax, pendingMax, "the job carries the cap");
        const listed = list(store, job);
        listings++;
        doomed = listed.doomed;
        outcomes.push(listed.outcome);
      } else if (job.kind === "delete_pending") {
        t.ok(job.keys.length <= config.deleteBatchPerPass, "a batch from the queue");
        t.ok(job.keys.every((k) => store.includes(k)), "only keys still in the store are queued");
        doomed = job.keys;
        outcomes.push({ ...job, taken: job.keys.length, failedFromOffset: null });
      } else continue;
      store = store.filter((o) => !doomed.includes(o));
    }
    s = runFinished(s, { outcomes }, nowMs).state;
    const p = s.partitions.get("1/1/0")!;
    t.ok(p.pendingDeletions.length <= pendingMax, `run ${run}: ${p.pendingDeletions.length} keys queued`);
    t.equal(s.pendingDeletionsTotal, p.pendingDeletions.length, "the gauge's total follows the queue");
    t.ok(
      store.every((o) => o.startOffset >= p.deletedBelow),
      `run ${run}: everything below ${p.deletedBelow} is gone`,
    );
    t.ok(
      store.every((o) => o.startOffset >= p.listedBelow || p.pendingDeletions.includes(o)),
      `run ${run}: whatever is left below the listing cursor ${p.listedBelow} is queued`,
    );
  }
  t.same(store, [], "every object below the watermark was deleted");
  t.equal(s.partitions.get("1/1/0")!.deletedBelow, 100);
  t.ok(listings >= 2, `${listings} listings: what the cap cut off was listed again`);
  t.ok(listings < 10, `${listings} listings for 20 keys at 2 per run: the queue saved most of them`);
  t.end();
});

t.test("a deletion outcome of an incarnation that is gone leaves the new one's queue alone", (t) => {
  let s = initialHousekeeping(config, 0);
  s = observe(s, { partitions: [view], requestCount: 0 }, 0).state;
  s = observe(s, { partitions: [{ ...view, incarnation: "aa-1", deletedUpToOffset: 0 }], requestCount: 0 }, 1)
    .state;
  s = runFinished({ ...s, running: true }, {
    outcomes: [{
      kind: "delete_below",
      partition: "1/1/0",
      incarnation: "aa-0",
      listedBelow: 60,
      pending: objectsBelow100.slice(0, 4),
      failedFromOffset: null,
    }],
  }, 2).state;
  t.match(s.partitions.get("1/1/0"), {
    incarnation: "aa-1",
    deletedBelow: 0,
    listedBelow: 0,
    pendingDeletions: [],
  });
  t.end();
});
