import t from "tap";
import { defaultRetryProfiles } from "../../src/objectstore/retry_policy.ts";
import {
  floorApplied,
  inFlightCount,
  initialState,
  partitionClosed,
  partitionOpened,
  pressureChanged,
  purged,
  segmentDeleted,
  type SegmentRef,
  segmentsSealed,
  stalledOffset,
  type Step,
  tick,
  type UploadEffect,
  uploadFailed,
  type UploadState,
  uploadSucceeded,
} from "../../src/tier/upload_core.ts";

// The upload core is pure: these tests feed events and read effects, with no I/O and no timers.

const config = {
  concurrencyMax: 2,
  transferDeadlineMs: 360_000,
  profiles: defaultRetryProfiles,
  pendingPerPartitionMax: 100,
};
const seg = (start: number, end: number, sealedAtMs = start): SegmentRef => ({
  startOffset: start,
  endOffset: end,
  sizeBytes: 100,
  sealedAtMs,
});
const starts = (effects: UploadEffect[]) =>
  effects.filter((e) => e.kind === "start_upload").map((e) =>
    e.kind === "start_upload" ? `${e.partition}@${e.segment.startOffset}` : ""
  );
const floors = (effects: UploadEffect[]) =>
  effects.filter((e) => e.kind === "submit_floor").map((e) =>
    e.kind === "submit_floor" ? `${e.partition}<${e.upToOffset}` : ""
  );
const identityOf = (state: UploadState, partition: string) =>
  state.partitions.get(partition)!.inFlight!.identity;

/** Applies steps in order, collecting every effect. */
function run(initial: UploadState, ...steps: ((s: UploadState) => Step)[]): Step {
  let state = initial;
  const effects: UploadEffect[] = [];
  for (const step of steps) {
    const result = step(state);
    state = result.state;
    effects.push(...result.effects);
  }
  return { state, effects };
}

function opened(...partitions: string[]): UploadState {
  let state = initialState(config);
  for (const p of partitions) {
    state = partitionOpened(state, { partition: p, generation: 0, floor: 0 }, 0).state;
  }
  return state;
}

t.test("oldest first per partition, one in flight per partition, at most concurrencyMax per shard", (t) => {
  const r = run(
    opened("a", "b", "c"),
    (s) =>
      segmentsSealed(s, { partition: "a", generation: 0, segments: [seg(100, 199, 5), seg(0, 99, 1)] }, 0),
    (s) => segmentsSealed(s, { partition: "b", generation: 0, segments: [seg(0, 9, 3)] }, 0),
    (s) => segmentsSealed(s, { partition: "c", generation: 0, segments: [seg(0, 9, 2)] }, 0),
  );
  t.same(
    starts(r.effects),
    ["a@0", "b@0"],
    "a's oldest segment first (sealed later but lower offset); two slots",
  );
  t.equal(inFlightCount(r.state), 2);
  const next = uploadSucceeded(r.state, { partition: "a", identity: identityOf(r.state, "a") }, 10);
  t.same(floors(next.effects), ["a<100"], "the floor moves past a's first segment");
  t.same(
    starts(next.effects),
    ["c@0"],
    "the free slot goes to the oldest sealed segment waiting (c, sealed at 2), not a's next (5)",
  );
  t.end();
});

t.test("partitions under local storage pressure go to the head of the queue", (t) => {
  const r = run(
    opened("old", "pressed"),
    (s) =>
      segmentsSealed(s, {
        partition: "old",
        generation: 0,
        segments: [seg(0, 9, 1), seg(10, 19, 2), seg(20, 29, 3)],
      }, 0),
  );
  const busy = run(
    { ...r.state, config: { ...config, concurrencyMax: 1 } },
    (s) => pressureChanged(s, { partition: "pressed", underPressure: true }, 0),
    (s) => segmentsSealed(s, { partition: "pressed", generation: 0, segments: [seg(0, 9, 50)] }, 0),
  );
  t.same(starts(busy.effects), [], "no free slot yet");
  const freed = uploadSucceeded(busy.state, { partition: "old", identity: identityOf(busy.state, "old") }, 5);
  t.same(starts(freed.effects), ["pressed@0"], "the pressed partition goes before old's older segments");
  t.end();
});

t.test("completions out of order across partitions each advance their own floor, in segment order", (t) => {
  const r = run(
    opened("a", "b"),
    (s) => segmentsSealed(s, { partition: "a", generation: 0, segments: [seg(0, 9), seg(10, 19)] }, 0),
    (s) => segmentsSealed(s, { partition: "b", generation: 0, segments: [seg(0, 4)] }, 0),
  );
  const a1 = identityOf(r.state, "a");
  const b1 = identityOf(r.state, "b");
  const done = run(
    r.state,
    (s) => uploadSucceeded(s, { partition: "b", identity: b1 }, 1),
    (s) => uploadSucceeded(s, { partition: "a", identity: a1 }, 2),
    (s) => uploadSucceeded(s, { partition: "a", identity: identityOf(s, "a") }, 3),
  );
  t.same(floors(done.effects), ["b<5", "a<10", "a<20"]);
  t.end();
});

t.test("a failure never skips: the same segment retries (at once, then backing off) and the floor waits", (t) => {
  const r = run(
    opened("a"),
    (s) => segmentsSealed(s, { partition: "a", generation: 0, segments: [seg(0, 9), seg(10, 19)] }, 0),
  );
  const id = identityOf(r.state, "a");
  const first = uploadFailed(
    r.state,
    { partition: "a", identity: id, errorClass: "retry", random: 0.99 },
    100,
  );
  t.same(starts(first.effects), ["a@0"], "a transient failure retries at once, the same segment");
  t.same(floors(first.effects), [], "no floor without success");
  const second = uploadFailed(first.state, {
    partition: "a",
    identity: identityOf(first.state, "a"),
    errorClass: "retry",
    random: 0.99,
  }, 200);
  t.same(starts(second.effects), [], "the second retry waits");
  t.ok(second.state.partitions.get("a")!.retryAtMs! > 200);
  const later = tick(second.state, second.state.partitions.get("a")!.retryAtMs!);
  t.same(starts(later.effects), ["a@0"], "then retries the same segment, never a@10");
  t.end();
});

t.test("a non-transient failure pins the floor (stalled offset gauge) and retries from 1 s", (t) => {
  const r = run(
    opened("a"),
    (s) => segmentsSealed(s, { partition: "a", generation: 0, segments: [seg(40, 49)] }, 0),
  );
  const failed = uploadFailed(r.state, {
    partition: "a",
    identity: identityOf(r.state, "a"),
    errorClass: "fail",
    random: 0,
  }, 1000);
  t.equal(stalledOffset(failed.state), 40);
  t.equal(
    failed.state.partitions.get("a")!.retryAtMs,
    1500,
    "from 1 s with equal jitter (0.5 s at the lowest draw)",
  );
  t.same(starts(tick(failed.state, 1499).effects), []);
  const retried = tick(failed.state, 1500);
  t.same(starts(retried.effects), ["a@40"]);
  const ok = uploadSucceeded(
    retried.state,
    { partition: "a", identity: identityOf(retried.state, "a") },
    1600,
  );
  t.equal(stalledOffset(ok.state), null, "the gauge clears once it succeeds");
  t.end();
});

t.test("a transfer deadline resubmits under the same identity; the first result counts, a late duplicate is discarded", (t) => {
  const r = run(
    opened("a"),
    (s) => segmentsSealed(s, { partition: "a", generation: 0, segments: [seg(0, 9), seg(10, 19)] }, 0),
  );
  const id = identityOf(r.state, "a");
  t.same(starts(tick(r.state, 359_999).effects), [], "not before the deadline");
  const resubmitted = tick(r.state, 360_000);
  t.same(resubmitted.effects.map((e) => e.kind === "start_upload" && e.resubmission), [true]);
  t.equal(identityOf(resubmitted.state, "a"), id, "same identity");
  const first = uploadSucceeded(resubmitted.state, { partition: "a", identity: id }, 360_100);
  t.same(floors(first.effects), ["a<10"]);
  const late = uploadSucceeded(first.state, { partition: "a", identity: id }, 360_200);
  t.same(late.effects.map((e) => e.kind), ["duplicate_discarded"], "the late result changes nothing");
  t.same(floors(late.effects), []);
  t.end();
});

t.test("the floor is monotone and checked against the generation", (t) => {
  const r = run(
    opened("a"),
    (s) =>
      segmentsSealed(
        s,
        { partition: "a", generation: 0, segments: [seg(0, 9), seg(10, 19), seg(20, 29)] },
        0,
      ),
  );
  const raised = floorApplied(r.state, { partition: "a", generation: 0, floor: 20 }, 1);
  t.equal(raised.state.partitions.get("a")!.floor, 20);
  t.same(
    raised.state.partitions.get("a")!.pending.map((s) => s.startOffset),
    [20],
    "segments below the floor leave the queue",
  );
  const lowered = floorApplied(raised.state, { partition: "a", generation: 0, floor: 10 }, 2);
  t.equal(lowered.state.partitions.get("a")!.floor, 20, "a lower floor never moves it back");
  const stale = floorApplied(raised.state, { partition: "a", generation: 7, floor: 30 }, 3);
  t.equal(stale.state.partitions.get("a")!.floor, 20, "another generation's floor is rejected");
  const oldSeal = segmentsSealed(raised.state, { partition: "a", generation: 1, segments: [seg(30, 39)] }, 4);
  t.same(oldSeal.effects, [], "another generation's segments are ignored");
  t.end();
});

t.test("a segment deleted by retention before upload is given up as its own event, and the floor moves past it", (t) => {
  const r = run(
    opened("a"),
    (s) => segmentsSealed(s, { partition: "a", generation: 0, segments: [seg(0, 9), seg(10, 19)] }, 0),
  );
  const failed = uploadFailed(r.state, {
    partition: "a",
    identity: identityOf(r.state, "a"),
    errorClass: "fail",
    random: 0.5,
  }, 0);
  const deleted = segmentDeleted(failed.state, { partition: "a", startOffset: 0 }, 10);
  t.same(deleted.effects.map((e) => e.kind), ["gave_up_deleted", "submit_floor", "start_upload"]);
  t.same(floors(deleted.effects), ["a<10"]);
  t.same(starts(deleted.effects), ["a@10"], "the pipeline moves on instead of stalling forever");
  t.same(
    segmentDeleted(deleted.state, { partition: "a", startOffset: 10 }, 11).effects.map((e) => e.kind).slice(
      0,
      1,
    ),
    [
      "gave_up_deleted",
    ],
    "even while it is in flight",
  );
  t.end();
});

t.test("purge during an upload: the upload becomes an orphan whose result is discarded; its slot frees when it reports", (t) => {
  const r = run(
    { ...opened("a", "b"), config: { ...config, concurrencyMax: 1 } },
    (s) => segmentsSealed(s, { partition: "a", generation: 0, segments: [seg(0, 9)] }, 0),
    (s) => segmentsSealed(s, { partition: "b", generation: 0, segments: [seg(0, 9, 99)] }, 0),
  );
  const id = identityOf(r.state, "a");
  const purgedStep = purged(r.state, { partition: "a", generation: 1 }, 5);
  t.equal(purgedStep.state.partitions.get("a")!.floor, 0);
  t.same(starts(purgedStep.effects), [], "the orphan still holds the only slot");
  const reported = uploadSucceeded(purgedStep.state, { partition: "a", identity: id }, 6);
  t.same(floors(reported.effects), [], "no floor for the old generation");
  t.same(starts(reported.effects), ["b@0"], "the slot is free again");
  const closed = partitionClosed(reported.state, { partition: "b" }, 7);
  t.equal(closed.state.orphans.size, 1, "closing a partition orphans its upload too");
  t.end();
});

t.test("an anomaly (an existing object with another checksum) is reported and stalls that partition", (t) => {
  const r = run(
    opened("a"),
    (s) => segmentsSealed(s, { partition: "a", generation: 0, segments: [seg(0, 9)] }, 0),
  );
  const failed = uploadFailed(
    r.state,
    {
      partition: "a",
      identity: identityOf(r.state, "a"),
      errorClass: "fail",
      anomaly: "checksum differs",
      random: 0.5,
    },
    0,
  );
  t.same(failed.effects.map((e) => e.kind), ["anomaly"]);
  t.same(starts(tick(failed.state, 10_000_000).effects), [], "never retried over the existing object");
  t.equal(stalledOffset(failed.state), 0);
  t.end();
});
