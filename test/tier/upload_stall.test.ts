import t from "tap";
import { defaultRetryProfiles } from "../../src/objectstore/retry_policy.ts";
import {
  floorApplied,
  floorSubmissionFailed,
  partitionOpened,
  segmentsSealed,
  tick,
  uploadFailed,
  uploadSucceeded,
} from "../../src/tier/upload/upload_core.ts";
import {
  initialState,
  stalledOffset,
  stalledPartitions,
  type Step,
  type UploadEffect,
  type UploadState,
} from "../../src/tier/upload/upload_state.ts";

// The stalled gauge (`strata_tier_upload_stalled_offset`) as a function of the upload core's state and
// the time: it rises once sealed segments have waited `stallAfterMs` without the floor moving and an
// attempt has failed, whatever the error class, and falls when the floor moves again.

const stallAfterMs = 120_000;
const config = {
  concurrencyMax: 1,
  transferDeadlineMs: 360_000,
  profiles: defaultRetryProfiles,
  pendingPerPartitionMax: 100,
  stallAfterMs,
};
const seg = (start: number, end: number) => ({
  startOffset: start,
  endOffset: end,
  sizeBytes: 100,
  sealedAtMs: 0,
});
const identityOf = (state: UploadState, partition: string) =>
  state.partitions.get(partition)!.inFlight!.identity;
const startsOf = (effects: UploadEffect[]) => effects.filter((e) => e.kind === "start_upload").length;

function sealed(partitions: string[], segments = [seg(0, 9), seg(10, 19)]): UploadState {
  let state = initialState(config);
  for (const partition of partitions) {
    state = partitionOpened(state, { partition, generation: 0, floor: 0 }, 0).state;
    state = segmentsSealed(state, { partition, generation: 0, segments }, 0).state;
  }
  return state;
}

/** A store that fails every attempt transiently from 0 to `untilMs`: each start fails at once. */
function outage(initial: UploadState, untilMs: number): { state: UploadState; failures: number } {
  let state = initial;
  let failures = 0;
  for (let nowMs = 0; nowMs <= untilMs; nowMs += 500) {
    if (state.partitions.get("a")!.inFlight !== null) {
      const failed = uploadFailed(state, {
        partition: "a",
        identity: identityOf(state, "a"),
        errorClass: "retry",
        random: 0.5,
      }, nowMs);
      state = failed.state;
      failures++;
    }
    state = tick(state, nowMs).state;
  }
  return { state, failures };
}

t.test("a store outage: transient failures stall the gauge after stallAfterMs; it falls when the floor moves", (t) => {
  const down = outage(sealed(["a"]), stallAfterMs - 500);
  t.ok(down.failures > 10, `${down.failures} transient failures`);
  t.equal(stalledOffset(down.state, stallAfterMs - 1), null, "not before the threshold");
  t.equal(stalledOffset(down.state, stallAfterMs), 0, "at the threshold: the head of the waiting work");
  t.same([stalledPartitions(down.state, stallAfterMs - 1), stalledPartitions(down.state, stallAfterMs)], [
    0,
    1,
  ]);
  // The store is back: the retry due next succeeds and its floor commits.
  let state = down.state;
  let nowMs = stallAfterMs;
  for (; state.partitions.get("a")!.inFlight === null && nowMs < 10 * stallAfterMs; nowMs += 500) {
    state = tick(state, nowMs).state;
  }
  const up = uploadSucceeded(state, { partition: "a", identity: identityOf(state, "a") }, nowMs);
  t.equal(stalledOffset(up.state, nowMs), null, "an upload succeeded: uploads resumed, the gauge falls");
  t.equal(stalledPartitions(up.state, nowMs), 0);
  t.equal(startsOf(up.effects), 1, "the next segment starts");
  const moved = floorApplied(up.state, { partition: "a", generation: 0, floor: 10 }, nowMs + 1);
  t.equal(
    moved.state.partitions.get("a")!.waitingSinceMs,
    nowMs + 1,
    "the floor moved: the wait starts again",
  );
  t.equal(
    stalledOffset(moved.state, nowMs + stallAfterMs),
    null,
    "healthy again: a long wait without a failure is not a stall",
  );
  t.end();
});

t.test("an upload that hangs stalls its partition; work that only queues behind it does not", (t) => {
  // One slot; `a` holds it without a result, `b` waits for it.
  const state = sealed(["a", "b"]);
  const inFlight = [...state.partitions.entries()].filter(([, p]) => p.inFlight !== null).map(([k]) => k);
  t.same(inFlight, ["a"]);
  t.equal(stalledPartitions(state, stallAfterMs - 1), 0, "not before the threshold");
  t.equal(stalledPartitions(state, stallAfterMs), 1, "a's upload has run stallAfterMs: only a is stalled");
  t.equal(stalledOffset(state, stallAfterMs), 0);
  const resubmitted = tick(state, config.transferDeadlineMs);
  t.equal(startsOf(resubmitted.effects), 1, "the transfer deadline resubmits it");
  t.equal(
    stalledPartitions(resubmitted.state, config.transferDeadlineMs),
    1,
    "a resubmission is the same upload: it stays stalled",
  );
  t.end();
});

t.test("a floor command that keeps failing to commit stalls the gauge at the floor", (t) => {
  // One segment: once it is uploaded nothing is pending, and only the floor command waits.
  const state = sealed(["a"], [seg(0, 9)]);
  const up = uploadSucceeded(state, { partition: "a", identity: identityOf(state, "a") }, 10);
  let step: Step = floorSubmissionFailed(up.state, {
    partition: "a",
    generation: 0,
    upToOffset: 10,
    attempt: 1,
    fenced: false,
    random: 0,
  }, 1000);
  t.equal(stalledOffset(step.state, 1000 + stallAfterMs - 1), null, "not before the threshold");
  t.equal(stalledOffset(step.state, 1000 + stallAfterMs), 0, "the floor that cannot move");
  step = floorApplied(step.state, { partition: "a", generation: 0, floor: 10 }, 1000 + stallAfterMs);
  t.equal(stalledOffset(step.state, 1000 + 2 * stallAfterMs), null, "it committed: the gauge falls");
  t.end();
});
