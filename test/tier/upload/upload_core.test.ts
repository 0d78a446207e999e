import t from "tap";
import { defaultRetryProfiles } from "../../../src/objectstore/retry_policy.ts";
import {
  floorApplied,
  floorSubmissionFailed,
  partitionClosed,
  partitionOpened,
  pressureChanged,
  purged,
  segmentDeleted,
  segmentsSealed,
  tick,
  uploadFailed,
  uploadSucceeded,
} from "../../../src/tier/upload/upload_core.ts";
import {
  floorRetriesWaiting,
  inFlightCount,
  initialState,
  type SegmentRef,
  stalledOffset,
  type Step,
  type UploadEffect,
  type UploadState,
} from "../../../src/tier/upload/upload_state.ts";

// The upload core is pure: these tests feed events and read effects, with no I/O and no timers.

const config = {
  concurrencyMax: 2,
  transferDeadlineMs: 360_000,
  profiles: defaultRetryProfiles,
  pendingPerPartitionMax: 100,
  stallAfterMs: 120_000,
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
  t.equal(stalledOffset(failed.state, 1000), 40, "at once: no wait for a pinned floor");
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
  t.equal(stalledOffset(ok.state, 1600), null, "the gauge clears once it succeeds");
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
  t.equal(stalledOffset(failed.state, 0), 0);
  t.end();
});

/** `a` with segment 0..9 uploaded: its floor command (a<10) is out. */
function uploadedOne(): Step {
  const r = run(
    opened("a"),
    (s) => segmentsSealed(s, { partition: "a", generation: 0, segments: [seg(0, 9), seg(10, 19)] }, 0),
  );
  return uploadSucceeded(r.state, { partition: "a", identity: identityOf(r.state, "a") }, 10);
}
const failure = (upToOffset: number, attempt = 1, generation = 0) => ({
  partition: "a",
  generation,
  upToOffset,
  attempt,
  fenced: false,
  random: 0,
});
const submitted = (effects: UploadEffect[]) =>
  effects.flatMap((e) => e.kind === "submit_floor" ? [`${e.partition}<${e.upToOffset}#${e.attempt}`] : []);

t.test("a failed floor submission does not move the floor; the same command goes again from a later tick", (t) => {
  const up = uploadedOne();
  t.same(submitted(up.effects), ["a<10#1"], "the first submission is attempt 1");
  const failed = floorSubmissionFailed(up.state, failure(10), 1000);
  t.same(failed.effects, [], "nothing at once");
  t.equal(failed.state.partitions.get("a")!.floor, 0, "the floor waits for a commit");
  t.equal(floorRetriesWaiting(failed.state), 1, "the gauge counts the waiting retry");
  t.same(
    submitted(tick(failed.state, 1499).effects),
    [],
    "not before the non-transient backoff (1 s, jittered)",
  );
  const again = tick(failed.state, 1500);
  t.same(submitted(again.effects), ["a<10#2"], "the same command, attempt 2");
  t.equal(floorRetriesWaiting(again.state), 1, "held until a commit, while the submission is out");
  t.same(submitted(tick(again.state, 100_000).effects), [], "submitted once per failure");
  const failedAgain = floorSubmissionFailed(again.state, failure(10, 2), 2000);
  t.equal(failedAgain.state.partitions.get("a")!.floorRetry!.retryAtMs, 3000, "then backs off from 2 s");
  t.same(submitted(tick(failedAgain.state, 3000).effects), ["a<10#3"]);
  const committed = floorApplied(again.state, { partition: "a", generation: 0, floor: 10 }, 1600);
  t.equal(floorRetriesWaiting(committed.state), 0, "a commit ends it");
  t.end();
});

t.test("while a floor retry is held, the scan's sealed segments below it are not uploaded again", (t) => {
  const up = uploadedOne();
  const failed = floorSubmissionFailed(up.state, failure(10), 0);
  const rescanned = segmentsSealed(
    failed.state,
    { partition: "a", generation: 0, segments: [seg(0, 9), seg(10, 19), seg(20, 29)] },
    5,
  );
  t.same(
    rescanned.state.partitions.get("a")!.pending.map((s) => s.startOffset),
    [10, 20],
    "segment 0 is in the store: only its floor is missing",
  );
  const withoutRetry = segmentsSealed(
    up.state,
    { partition: "a", generation: 0, segments: [seg(0, 9), seg(10, 19), seg(20, 29)] },
    5,
  );
  t.same(
    withoutRetry.state.partitions.get("a")!.pending.map((s) => s.startOffset),
    [0, 10, 20],
    "without a failure the scan offers every segment the floor has not passed",
  );
  t.end();
});

t.test("floor retries back off with each failed attempt, up to the profile's cap", (t) => {
  const up = uploadedOne();
  const delays = [1, 2, 3, 4, 5, 6, 7, 8].map((attempt) => {
    const failed = floorSubmissionFailed(up.state, failure(10, attempt), 0);
    return failed.state.partitions.get("a")!.floorRetry!.retryAtMs;
  });
  t.same(
    delays,
    [500, 1000, 2000, 4000, 8000, 15_000, 15_000, 15_000],
    "1 s doubling to 30 s, at the lowest draw",
  );
  t.end();
});

t.test("one floor retry waits per partition, the highest; a commit at or past it ends it", (t) => {
  const up = uploadedOne();
  const low = floorSubmissionFailed(up.state, failure(10), 0);
  const high = floorSubmissionFailed(low.state, failure(20), 0);
  t.equal(high.state.partitions.get("a")!.floorRetry!.upToOffset, 20, "the higher command covers the lower");
  const lateLow = floorSubmissionFailed(high.state, failure(10, 3), 0);
  t.equal(lateLow.state, high.state, "a lower failure after a higher one changes nothing");
  const partial = floorApplied(high.state, { partition: "a", generation: 0, floor: 10 }, 1);
  t.equal(partial.state.partitions.get("a")!.floorRetry!.upToOffset, 20, "a lower commit leaves it waiting");
  const covered = floorApplied(high.state, { partition: "a", generation: 0, floor: 20 }, 1);
  t.equal(covered.state.partitions.get("a")!.floorRetry, null, "a commit at its offset ends it");
  t.same(submitted(tick(covered.state, 1_000_000).effects), []);
  t.end();
});

t.test("moot floor failures: another generation, a floor already passed, a purged or closed partition", (t) => {
  const up = uploadedOne();
  t.equal(floorSubmissionFailed(up.state, failure(10, 1, 1), 0).state, up.state, "another generation");
  const applied = floorApplied(up.state, { partition: "a", generation: 0, floor: 10 }, 1);
  t.equal(floorSubmissionFailed(applied.state, failure(10), 2).state, applied.state, "already committed");
  const waiting = floorSubmissionFailed(up.state, failure(10), 0);
  const purge = purged(waiting.state, { partition: "a", generation: 1 }, 1);
  t.equal(purge.state.partitions.get("a")!.floorRetry, null, "a purge drops the old generation's retry");
  const closed = partitionClosed(waiting.state, { partition: "a" }, 1);
  t.equal(floorRetriesWaiting(closed.state), 0);
  t.same(submitted(tick(closed.state, 1_000_000).effects), [], "nothing for a closed partition");
  t.end();
});

t.test("a fenced submission (the control log's epoch moved) is reported and never submitted again", (t) => {
  const up = uploadedOne();
  const fenced = floorSubmissionFailed(up.state, { ...failure(10), fenced: true }, 0);
  t.same(fenced.effects, [{ kind: "floor_fenced", partition: "a", upToOffset: 10 }]);
  t.equal(fenced.state, up.state);
  t.same(submitted(tick(fenced.state, 1_000_000).effects), []);
  t.end();
});

t.test("uploads go on while a floor retry waits", (t) => {
  const up = uploadedOne();
  t.same(starts(up.effects), ["a@10"], "the next segment started with the first submission");
  const failed = floorSubmissionFailed(up.state, failure(10), 0);
  const next = uploadSucceeded(failed.state, { partition: "a", identity: identityOf(failed.state, "a") }, 5);
  t.same(submitted(next.effects), ["a<20#1"], "the next floor command is submitted as usual");
  t.end();
});

t.test("a node that leads again under a new epoch: the old term's late result is an orphan's, the new term's counts", (t) => {
  const underFive = run(
    initialState(config),
    (s) => partitionOpened(s, { partition: "a", generation: 0, floor: 0, term: 5 }, 0),
    (s) => segmentsSealed(s, { partition: "a", generation: 0, segments: [seg(0, 9)] }, 0),
  );
  const oldIdentity = identityOf(underFive.state, "a");
  // Leadership moved away and came back: term 5 closes, term 6 uploads the same segment again.
  const underSix = run(
    underFive.state,
    (s) => partitionClosed(s, { partition: "a" }, 1),
    (s) => partitionOpened(s, { partition: "a", generation: 0, floor: 0, term: 6 }, 2),
    (s) => segmentsSealed(s, { partition: "a", generation: 0, segments: [seg(0, 9)] }, 2),
  );
  const newIdentity = identityOf(underSix.state, "a");
  t.not(newIdentity, oldIdentity, "the terms' uploads have different identities");
  t.same(starts(underSix.effects), ["a@0"], "the new term uploads the segment again");
  // The new term's upload reports first: it is taken, and the floor is submitted.
  const done = uploadSucceeded(underSix.state, { partition: "a", identity: newIdentity }, 3);
  t.same(floors(done.effects), ["a<10"]);
  // The old term's upload reports late: released as an orphan, nothing else.
  const late = uploadSucceeded(done.state, { partition: "a", identity: oldIdentity }, 4);
  t.same(floors(late.effects), [], "no floor from the old term");
  t.equal(late.state.orphans.size, 0, "its orphan released");
  t.end();
});
