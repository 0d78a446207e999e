import { assert } from "../../runtime/assert.ts";
import type { ErrorClass } from "../../objectstore/object_store_errors.ts";
import { decideRetry } from "../../objectstore/retry_policy.ts";
import {
  busyWhere,
  type InFlight,
  inFlightCount,
  openedPartition,
  type PartitionUploads,
  type SegmentRef,
  type Step,
  type UploadEffect,
  type UploadState,
  withoutPartition,
  withPartition,
} from "./upload_state.ts";

/**
 * The upload loop's decisions, as a pure core (docs/DESIGN.md, "Pure cores"): one function per
 * event, `(state, event, nowMs) → {state, effects}`, effects as data that a thin shell runs. No
 * I/O, no timers, no randomness except the draw passed in the event.
 *
 * Per partition, sealed segments above the tiered floor upload oldest first, one at a time, so
 * the floor advances contiguously; at most `concurrencyMax` uploads run per shard. Partitions under
 * local storage pressure go first. A failure never skips a segment: it retries (transient or
 * non-transient profile) and holds the floor. An upload whose result never comes back is
 * resubmitted under the same identity when its transfer deadline passes; whichever result arrives
 * first is accounted and a later duplicate is discarded. A floor command that fails to commit is
 * submitted again, never dropped. The floor here is exclusive: every offset below it is durable in
 * the store.
 */

/** A partition joins (at boot or creation) with its floor and generation as last applied. */
export function partitionOpened(
  state: UploadState,
  /** `term`: the leader epoch the uploads run under (absent: 0, a single node). */
  e: { partition: string; generation: number; floor: number; term?: number },
  nowMs: number,
): Step {
  return dispatch(
    withPartition(state, e.partition, openedPartition(e.generation, e.floor, e.term ?? 0), nowMs),
    nowMs,
    [],
  );
}

/** A partition is gone (topic deleted): its pending work is dropped; an upload in flight becomes an orphan. */
export function partitionClosed(state: UploadState, e: { partition: string }, nowMs: number): Step {
  const p = state.partitions.get(e.partition);
  if (p === undefined) return { state, effects: [] };
  const orphans = new Set(state.orphans);
  if (p.inFlight !== null) orphans.add(p.inFlight.identity);
  return dispatch({ ...withoutPartition(state, e.partition), orphans }, nowMs, []);
}

/** Sealed segments found (on seal, or by the scan); those below the floor or already known are ignored. */
export function segmentsSealed(
  state: UploadState,
  e: { partition: string; generation: number; segments: SegmentRef[] },
  nowMs: number,
): Step {
  const p = state.partitions.get(e.partition);
  if (p === undefined || e.generation !== p.generation) return { state, effects: [] };
  const known = new Set([...p.pending.map((s) => s.startOffset), p.inFlight?.segment.startOffset]);
  // Below a floor command that failed to commit, every segment is in the store already.
  const uploadedBelow = Math.max(p.floor, p.floorRetry?.upToOffset ?? 0);
  const fresh = e.segments.filter((s) => s.startOffset >= uploadedBelow && !known.has(s.startOffset));
  if (fresh.length === 0) return { state, effects: [] };
  const pending = [...p.pending, ...fresh]
    .sort((a, b) => a.startOffset - b.startOffset)
    .slice(0, state.config.pendingPerPartitionMax);
  return dispatch(withPartition(state, e.partition, { ...p, pending }, nowMs), nowMs, []);
}

/** Both objects of a segment are in the store: submit the floor command and start the next. */
export function uploadSucceeded(
  state: UploadState,
  e: { partition: string; identity: string },
  nowMs: number,
): Step {
  const matched = matchResult(state, e, nowMs);
  if ("effects" in matched) return matched;
  const p = matched;
  const done = p.inFlight.segment;
  const next: PartitionUploads = {
    ...p,
    inFlight: null,
    pending: p.pending.filter((s) => s.startOffset !== done.startOffset),
    failures: 0,
    retryAtMs: null,
    stalled: false,
  };
  return dispatch(withPartition(state, e.partition, next, nowMs), nowMs, [
    {
      kind: "submit_floor",
      partition: e.partition,
      generation: p.generation,
      upToOffset: done.endOffset + 1,
      attempt: 1,
    },
  ]);
}

/**
 * An upload failed after the store layer's own retries. It is retried later, never skipped:
 * transient errors at once then backing off, others from 1 s. `random` is a uniform draw in [0, 1).
 */
export function uploadFailed(
  state: UploadState,
  e: { partition: string; identity: string; errorClass: ErrorClass; anomaly?: string; random: number },
  nowMs: number,
): Step {
  const matched = matchResult(state, e, nowMs);
  if ("effects" in matched) return matched;
  const p = matched;
  const failures = p.failures + 1;
  // Answers such as auth errors are not retried by the store layer, but an upload is never given
  // up: they take the non-transient profile here.
  const errorClass = e.errorClass === "retry" ? "retry" : "fail";
  const decision = decideRetry(errorClass, false, failures, nowMs, Infinity, state.config.profiles, e.random);
  assert(decision.retry, "an upload retry without a deadline is always allowed");
  const effects: UploadEffect[] = e.anomaly === undefined
    ? []
    : [{ kind: "anomaly", partition: e.partition, segment: p.inFlight.segment, detail: e.anomaly }];
  const next: PartitionUploads = {
    ...p,
    inFlight: null,
    failures,
    retryAtMs: nowMs + decision.delayMs,
    stalled: errorClass === "fail",
    anomaly: e.anomaly ?? p.anomaly,
  };
  return dispatch(withPartition(state, e.partition, next, nowMs), nowMs, effects);
}

/**
 * Total retention deleted a segment before it was uploaded: the only way an un-uploaded range is
 * given up. It leaves the queue, and the floor may move past it.
 */
export function segmentDeleted(
  state: UploadState,
  e: { partition: string; startOffset: number },
  nowMs: number,
): Step {
  const p = state.partitions.get(e.partition);
  if (p === undefined) return { state, effects: [] };
  const head = p.pending[0];
  const inFlightHere = p.inFlight?.segment.startOffset === e.startOffset;
  if (head === undefined || head.startOffset !== e.startOffset) return { state, effects: [] };
  const orphans = new Set(state.orphans);
  if (inFlightHere) orphans.add(p.inFlight!.identity);
  const next: PartitionUploads = {
    ...p,
    pending: p.pending.slice(1),
    inFlight: inFlightHere ? null : p.inFlight,
    failures: 0,
    retryAtMs: null,
    stalled: false,
    anomaly: null,
  };
  return dispatch({ ...withPartition(state, e.partition, next, nowMs), orphans }, nowMs, [
    { kind: "gave_up_deleted", partition: e.partition, segment: head },
    {
      kind: "submit_floor",
      partition: e.partition,
      generation: p.generation,
      upToOffset: head.endOffset + 1,
      attempt: 1,
    },
  ]);
}

/** The control log applied a floor: segments below it leave the queue. */
export function floorApplied(
  state: UploadState,
  e: { partition: string; generation: number; floor: number },
  nowMs: number,
): Step {
  const p = state.partitions.get(e.partition);
  if (p === undefined || e.generation !== p.generation) return { state, effects: [] };
  const floor = Math.max(p.floor, e.floor);
  const next = {
    ...p,
    floor,
    pending: p.pending.filter((s) => s.endOffset >= floor),
    // A committed floor at or past a failed command makes its retry moot.
    floorRetry: p.floorRetry !== null && p.floorRetry.upToOffset <= floor ? null : p.floorRetry,
  };
  return dispatch(withPartition(state, e.partition, next, nowMs), nowMs, []);
}

/**
 * A floor command failed to commit (`submit_floor` rejected). The floor does not move: it moves
 * only when the control log commits and applies a command. Unless the log refused it because its
 * epoch moved (`fenced`: another now leads the partition, and this one must not submit again), the
 * same command is submitted again from a tick after the non-transient profile's backoff, until one
 * commits; meanwhile the segments below it, uploaded already, are not uploaded again. One retry is
 * held per partition, the highest command's: a higher floor covers every offset a lower one does.
 * Failures of an older generation, or of a floor already passed, are moot.
 */
export function floorSubmissionFailed(
  state: UploadState,
  e: {
    partition: string;
    generation: number;
    upToOffset: number;
    attempt: number;
    fenced: boolean;
    random: number;
  },
  nowMs: number,
): Step {
  const p = state.partitions.get(e.partition);
  if (p === undefined || e.generation !== p.generation || e.upToOffset <= p.floor) {
    return { state, effects: [] };
  }
  if (e.fenced) {
    return { state, effects: [{ kind: "floor_fenced", partition: e.partition, upToOffset: e.upToOffset }] };
  }
  const retry = p.floorRetry;
  // A higher command covers this one; one of the same offset already waiting covers it too.
  if (
    retry !== null &&
    (retry.upToOffset > e.upToOffset || (retry.upToOffset === e.upToOffset && retry.retryAtMs !== null))
  ) {
    return { state, effects: [] };
  }
  const attempt = Math.max(e.attempt, retry?.attempt ?? 0);
  const decision = decideRetry("fail", false, attempt, nowMs, Infinity, state.config.profiles, e.random);
  assert(decision.retry, "a floor retry without a deadline is always allowed");
  const floorRetry = { upToOffset: e.upToOffset, attempt, retryAtMs: nowMs + decision.delayMs };
  return { state: withPartition(state, e.partition, { ...p, floorRetry }, nowMs), effects: [] };
}

/** A purge: a new generation, floor 0, nothing queued; an upload in flight lands under the old prefix as an orphan. */
export function purged(
  state: UploadState,
  e: { partition: string; generation: number },
  nowMs: number,
): Step {
  const p = state.partitions.get(e.partition);
  if (p === undefined) return { state, effects: [] };
  const orphans = new Set(state.orphans);
  if (p.inFlight !== null) orphans.add(p.inFlight.identity);
  // As a partition that joins at floor 0, but the pressure it is under stays.
  const next: PartitionUploads = {
    ...openedPartition(e.generation, 0, p.term),
    underPressure: p.underPressure,
  };
  return dispatch({ ...withPartition(state, e.partition, next, nowMs), orphans }, nowMs, []);
}

export function pressureChanged(
  state: UploadState,
  e: { partition: string; underPressure: boolean },
  nowMs: number,
): Step {
  const p = state.partitions.get(e.partition);
  if (p === undefined || p.underPressure === e.underPressure) return { state, effects: [] };
  return dispatch(
    withPartition(state, e.partition, { ...p, underPressure: e.underPressure }, nowMs),
    nowMs,
    [],
  );
}

/**
 * The tick: resubmit uploads past their transfer deadline, submit again the floor commands whose
 * retry is due, and start what is due.
 */
export function tick(state: UploadState, nowMs: number): Step {
  const effects: UploadEffect[] = [];
  let next = state;
  const overdue = busyWhere(state, (p) => p.inFlight !== null && p.inFlight.deadlineAtMs <= nowMs);
  for (const [key, p] of overdue) {
    const inFlight = {
      ...p.inFlight!,
      deadlineAtMs: nowMs + state.config.transferDeadlineMs,
      submissions: p.inFlight!.submissions + 1,
    };
    next = withPartition(next, key, { ...p, inFlight }, nowMs);
    effects.push({
      kind: "start_upload",
      partition: key,
      generation: p.generation,
      segment: inFlight.segment,
      identity: inFlight.identity,
      deadlineAtMs: inFlight.deadlineAtMs,
      resubmission: true,
    });
  }
  return dispatch(dueFloorRetries(next, nowMs, effects), nowMs, effects);
}

/** Submits the floor retries due at `nowMs` again, each as a `submit_floor` effect. */
function dueFloorRetries(state: UploadState, nowMs: number, effects: UploadEffect[]): UploadState {
  let next = state;
  const due = busyWhere(state, (p) => p.floorRetry?.retryAtMs != null && p.floorRetry.retryAtMs <= nowMs);
  for (const [key, p] of due) {
    const retry = p.floorRetry!;
    const attempt = retry.attempt + 1;
    next = withPartition(next, key, { ...p, floorRetry: { ...retry, attempt, retryAtMs: null } }, nowMs);
    effects.push({
      kind: "submit_floor",
      partition: key,
      generation: p.generation,
      upToOffset: retry.upToOffset,
      attempt,
    });
  }
  return next;
}

/** Starts uploads while slots are free: partitions under pressure first, then the oldest sealed segment. */
function dispatch(state: UploadState, nowMs: number, effects: UploadEffect[]): Step {
  let free = state.config.concurrencyMax - inFlightCount(state);
  if (free <= 0) return { state, effects };
  // Ties go to the partition that joined first.
  const ready = busyWhere(
    state,
    (p) =>
      p.inFlight === null && p.anomaly === null && p.pending.length > 0 &&
      (p.retryAtMs ?? -Infinity) <= nowMs,
  ).sort(([, a], [, b]) =>
    Number(b.underPressure) - Number(a.underPressure) || a.pending[0]!.sealedAtMs - b.pending[0]!.sealedAtMs
  );
  let next = state;
  for (const [key, p] of ready) {
    if (free <= 0) break;
    const segment = p.pending[0]!;
    const inFlight: InFlight = {
      identity: `${key}:${p.generation}:${p.term}:${segment.startOffset}`,
      segment,
      generation: p.generation,
      deadlineAtMs: nowMs + state.config.transferDeadlineMs,
      submissions: 1,
      startedAtMs: nowMs,
    };
    next = withPartition(next, key, { ...p, inFlight, retryAtMs: null }, nowMs);
    effects.push({
      kind: "start_upload",
      partition: key,
      generation: p.generation,
      segment,
      identity: inFlight.identity,
      deadlineAtMs: inFlight.deadlineAtMs,
      resubmission: false,
    });
    free--;
  }
  return { state: next, effects };
}

/**
 * The partition whose in-flight upload a result belongs to; otherwise the step that discards the
 * result (a late duplicate, or an orphan of a purge, which frees its slot).
 */
function matchResult(
  state: UploadState,
  e: { partition: string; identity: string },
  nowMs: number,
): (PartitionUploads & { inFlight: InFlight }) | Step {
  if (state.orphans.has(e.identity)) return releaseOrphan(state, e, nowMs);
  const p = state.partitions.get(e.partition);
  if (p === undefined || p.inFlight?.identity !== e.identity) {
    return {
      state,
      effects: [{ kind: "duplicate_discarded", partition: e.partition, identity: e.identity }],
    };
  }
  return p as PartitionUploads & { inFlight: InFlight };
}

function releaseOrphan(state: UploadState, e: { partition: string; identity: string }, nowMs: number): Step {
  const orphans = new Set(state.orphans);
  orphans.delete(e.identity);
  return dispatch({ ...state, orphans }, nowMs, [{
    kind: "duplicate_discarded",
    partition: e.partition,
    identity: e.identity,
  }]);
}
