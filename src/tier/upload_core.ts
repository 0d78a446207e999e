import { assert } from "../runtime/assert.ts";
import type { ErrorClass } from "../objectstore/object_store_errors.ts";
import { decideRetry, type RetryProfiles } from "../objectstore/retry_policy.ts";

/**
 * The upload loop's decisions, as a pure core in the manner of `upload-path.md` § "Functional
 * core": one function per event, `(state, event, nowMs) → {state, effects}`, effects as data that
 * a thin shell runs. No I/O, no timers, no randomness except the draw passed in the event.
 *
 * Per partition, sealed segments above the tiered floor upload oldest first, one at a time, so
 * the floor advances contiguously; at most `concurrencyMax` uploads run per shard. Partitions under
 * local storage pressure go first. A failure never skips a segment: it retries (transient or
 * non-transient profile) and holds the floor. An upload whose result never comes back is
 * resubmitted under the same identity when its transfer deadline passes; whichever result arrives
 * first is accounted and a later duplicate is discarded. The floor here is exclusive: every offset
 * below it is durable in the store.
 */

export interface SegmentRef {
  startOffset: number;
  endOffset: number;
  sizeBytes: number;
  /** When it sealed (clock ms): the order across partitions. */
  sealedAtMs: number;
}

export interface InFlight {
  /** `{partition}:{generation}:{startOffset}`: the same for every resubmission of one upload. */
  identity: string;
  segment: SegmentRef;
  generation: number;
  deadlineAtMs: number;
  submissions: number;
}

export interface PartitionUploads {
  generation: number;
  /** Exclusive: offsets below it are in the store (as the control log last applied it). */
  floor: number;
  /** Sealed segments at or above the floor, not yet uploaded, by start offset. */
  pending: SegmentRef[];
  inFlight: InFlight | null;
  /** Consecutive failures of the head segment. */
  failures: number;
  /** No attempt before this (clock ms); null when none is waiting. */
  retryAtMs: number | null;
  /** The head failed with a non-transient error: the floor is pinned there. */
  stalled: boolean;
  /** An existing object with a different checksum: reported, never overwritten, floor stalled. */
  anomaly: string | null;
  underPressure: boolean;
}

export interface UploadConfig {
  concurrencyMax: number;
  /** How long an upload may go without a result before it is resubmitted (4 × segment_upload_timeout). */
  transferDeadlineMs: number;
  profiles: RetryProfiles;
  /** Bound on segments queued per partition; the scan finds the rest later. */
  pendingPerPartitionMax: number;
}

export interface UploadState {
  config: UploadConfig;
  partitions: ReadonlyMap<string, PartitionUploads>;
  /** Uploads whose partition was purged meanwhile: they still hold a slot until they report. */
  orphans: ReadonlySet<string>;
}

export type UploadEffect =
  | {
    kind: "start_upload";
    partition: string;
    generation: number;
    segment: SegmentRef;
    identity: string;
    deadlineAtMs: number;
    resubmission: boolean;
  }
  | { kind: "submit_floor"; partition: string; generation: number; upToOffset: number }
  | { kind: "gave_up_deleted"; partition: string; segment: SegmentRef }
  | { kind: "duplicate_discarded"; partition: string; identity: string }
  | { kind: "anomaly"; partition: string; segment: SegmentRef; detail: string };

export interface Step {
  state: UploadState;
  effects: UploadEffect[];
}

export function initialState(config: UploadConfig): UploadState {
  assert(config.concurrencyMax >= 1, "upload concurrency must be at least 1");
  return { config, partitions: new Map(), orphans: new Set() };
}

/** A partition joins (at boot or creation) with its floor and generation as last applied. */
export function partitionOpened(
  state: UploadState,
  e: { partition: string; generation: number; floor: number },
  nowMs: number,
): Step {
  const record: PartitionUploads = {
    generation: e.generation,
    floor: e.floor,
    pending: [],
    inFlight: null,
    failures: 0,
    retryAtMs: null,
    stalled: false,
    anomaly: null,
    underPressure: false,
  };
  return dispatch(withPartition(state, e.partition, record), nowMs, []);
}

/** A partition is gone (topic deleted): its pending work is dropped; an upload in flight becomes an orphan. */
export function partitionClosed(state: UploadState, e: { partition: string }, nowMs: number): Step {
  const p = state.partitions.get(e.partition);
  if (p === undefined) return { state, effects: [] };
  const partitions = new Map(state.partitions);
  partitions.delete(e.partition);
  const orphans = new Set(state.orphans);
  if (p.inFlight !== null) orphans.add(p.inFlight.identity);
  return dispatch({ ...state, partitions, orphans }, nowMs, []);
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
  const fresh = e.segments.filter((s) => s.startOffset >= p.floor && !known.has(s.startOffset));
  if (fresh.length === 0) return { state, effects: [] };
  const pending = [...p.pending, ...fresh]
    .sort((a, b) => a.startOffset - b.startOffset)
    .slice(0, state.config.pendingPerPartitionMax);
  return dispatch(withPartition(state, e.partition, { ...p, pending }), nowMs, []);
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
  return dispatch(withPartition(state, e.partition, next), nowMs, [
    {
      kind: "submit_floor",
      partition: e.partition,
      generation: p.generation,
      upToOffset: done.endOffset + 1,
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
  return dispatch(withPartition(state, e.partition, next), nowMs, effects);
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
  return dispatch({ ...withPartition(state, e.partition, next), orphans }, nowMs, [
    { kind: "gave_up_deleted", partition: e.partition, segment: head },
    {
      kind: "submit_floor",
      partition: e.partition,
      generation: p.generation,
      upToOffset: head.endOffset + 1,
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
  const next = { ...p, floor, pending: p.pending.filter((s) => s.endOffset >= floor) };
  return dispatch(withPartition(state, e.partition, next), nowMs, []);
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
  const next: PartitionUploads = {
    ...p,
    generation: e.generation,
    floor: 0,
    pending: [],
    inFlight: null,
    failures: 0,
    retryAtMs: null,
    stalled: false,
    anomaly: null,
  };
  return dispatch({ ...withPartition(state, e.partition, next), orphans }, nowMs, []);
}

export function pressureChanged(
  state: UploadState,
  e: { partition: string; underPressure: boolean },
  nowMs: number,
): Step {
  const p = state.partitions.get(e.partition);
  if (p === undefined || p.underPressure === e.underPressure) return { state, effects: [] };
  return dispatch(withPartition(state, e.partition, { ...p, underPressure: e.underPressure }), nowMs, []);
}

/** The tick: resubmit uploads past their transfer deadline, and start what is due. */
export function tick(state: UploadState, nowMs: number): Step {
  const effects: UploadEffect[] = [];
  let next = state;
  for (const [key, p] of state.partitions) {
    if (p.inFlight === null || p.inFlight.deadlineAtMs > nowMs) continue;
    const inFlight = {
      ...p.inFlight,
      deadlineAtMs: nowMs + state.config.transferDeadlineMs,
      submissions: p.inFlight.submissions + 1,
    };
    next = withPartition(next, key, { ...p, inFlight });
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
  return dispatch(next, nowMs, effects);
}

/** Uploads in flight, orphans included (they hold a slot until they report). */
export function inFlightCount(state: UploadState): number {
  let n = state.orphans.size;
  for (const p of state.partitions.values()) if (p.inFlight !== null) n++;
  return n;
}

/** Gauge: the lowest offset where an upload is pinned by a non-transient failure, or null. */
export function stalledOffset(state: UploadState): number | null {
  let lowest: number | null = null;
  for (const p of state.partitions.values()) {
    const head = p.pending[0];
    if (p.stalled && head !== undefined) {
      lowest = lowest === null ? head.startOffset : Math.min(lowest, head.startOffset);
    }
  }
  return lowest;
}

/** Starts uploads while slots are free: partitions under pressure first, then the oldest sealed segment. */
function dispatch(state: UploadState, nowMs: number, effects: UploadEffect[]): Step {
  const ready = [...state.partitions.entries()]
    .filter(([, p]) =>
      p.inFlight === null && p.anomaly === null && p.pending.length > 0 && (p.retryAtMs ?? -Infinity) <= nowMs
    )
    .sort(([, a], [, b]) =>
      Number(b.underPressure) - Number(a.underPressure) || a.pending[0]!.sealedAtMs - b.pending[0]!.sealedAtMs
    );
  let next = state;
  let free = state.config.concurrencyMax - inFlightCount(state);
  for (const [key, p] of ready) {
    if (free <= 0) break;
    const segment = p.pending[0]!;
    const inFlight: InFlight = {
      identity: `${key}:${p.generation}:${segment.startOffset}`,
      segment,
      generation: p.generation,
      deadlineAtMs: nowMs + state.config.transferDeadlineMs,
      submissions: 1,
    };
    next = withPartition(next, key, { ...p, inFlight, retryAtMs: null });
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

function withPartition(state: UploadState, key: string, record: PartitionUploads): UploadState {
  const partitions = new Map(state.partitions);
  partitions.set(key, record);
  return { ...state, partitions };
}
