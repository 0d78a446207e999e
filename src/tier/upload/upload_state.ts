import { assert } from "../../runtime/assert.ts";
import type { RetryProfiles } from "../../objectstore/retry_policy.ts";
import { PersistentMap } from "../../runtime/persistent_map.ts";

/**
 * The state the upload core (`upload_core.ts`) decides on, its effects, and the gauges read from
 * it. Immutable: every event returns a new state.
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
  /** When the first submission started (clock ms); resubmissions keep it. */
  startedAtMs: number;
}

/**
 * A floor command whose submission failed and that has not committed since. Every segment below
 * `upToOffset` is in the store (or was given up to retention), so none is uploaded again meanwhile.
 */
export interface FloorRetry {
  upToOffset: number;
  /** The number of the submission that last failed, or of the one out now (1 for the first). */
  attempt: number;
  /** Submitted again at the first tick at or after this (clock ms); null while that submission is out. */
  retryAtMs: number | null;
}

export interface PartitionUploads {
  generation: number;
  /**
   * The leader epoch this node's uploads of the partition run under (0 on a single node). Part of
   * every upload's identity: an upload of an earlier term that reports late is never taken for one
   * of this term's.
   */
  term: number;
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
  /** The highest floor command that failed to commit and has not committed since; null when none. */
  floorRetry: FloorRetry | null;
  /**
   * Since when work has waited (sealed segments pending, or a floor command not committed) without
   * the floor moving (clock ms); null while nothing waits. The stalled gauge reads it.
   */
  waitingSinceMs: number | null;
}

export interface UploadConfig {
  concurrencyMax: number;
  /** How long an upload may go without a result before it is resubmitted (4 × segment_upload_timeout). */
  transferDeadlineMs: number;
  profiles: RetryProfiles;
  /** Bound on segments queued per partition; the scan finds the rest later. */
  pendingPerPartitionMax: number;
  /** Work that waits this long without the floor moving counts as stalled (`upload_stall_after`). */
  stallAfterMs: number;
}

export interface UploadState {
  config: UploadConfig;
  /** One record per partition; a change copies about 1/256 of them (`PersistentMap`). */
  partitions: PersistentMap<PartitionUploads>;
  /**
   * The partitions with work: sealed segments pending, an upload in flight, or a floor command
   * waiting (`hasWork`). The tick and the dispatch look only at these, so an idle partition costs
   * nothing per tick.
   */
  busy: ReadonlySet<string>;
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
  /** Submit the floor command to the control log; `attempt` counts submissions of it (1 the first). */
  | { kind: "submit_floor"; partition: string; generation: number; upToOffset: number; attempt: number }
  | { kind: "gave_up_deleted"; partition: string; segment: SegmentRef }
  | { kind: "duplicate_discarded"; partition: string; identity: string }
  | { kind: "anomaly"; partition: string; segment: SegmentRef; detail: string }
  /** The control log refused a floor command: its epoch moved, so another leads the partition. */
  | { kind: "floor_fenced"; partition: string; upToOffset: number };

export interface Step {
  state: UploadState;
  effects: UploadEffect[];
}

export function initialState(config: UploadConfig): UploadState {
  assert(config.concurrencyMax >= 1, "upload concurrency must be at least 1");
  assert(config.stallAfterMs > 0, "the stall threshold must be positive");
  return { config, partitions: PersistentMap.empty(), busy: new Set(), orphans: new Set() };
}

/** A partition's record as it joins: nothing queued, nothing in flight. */
export function openedPartition(generation: number, floor: number, term = 0): PartitionUploads {
  return {
    generation,
    term,
    floor,
    pending: [],
    inFlight: null,
    failures: 0,
    retryAtMs: null,
    stalled: false,
    anomaly: null,
    underPressure: false,
    floorRetry: null,
    waitingSinceMs: null,
  };
}

/**
 * The state with `record` as the partition's, its wait clock kept up to date: the wait starts when
 * work appears, starts again whenever the floor moves (or a new generation begins), and ends when
 * nothing waits.
 */
export function withPartition(
  state: UploadState,
  key: string,
  record: PartitionUploads,
  nowMs: number,
): UploadState {
  const before = state.partitions.get(key);
  const waits = record.pending.length > 0 || record.floorRetry !== null;
  const progressed = before === undefined || before.waitingSinceMs === null ||
    record.floor > before.floor || record.generation !== before.generation;
  const waitingSinceMs = !waits ? null : progressed ? nowMs : before.waitingSinceMs;
  const partitions = state.partitions.with(key, { ...record, waitingSinceMs });
  return { ...state, partitions, busy: withBusy(state.busy, key, hasWork(record)) };
}

/** The state without the partition's record. */
export function withoutPartition(state: UploadState, key: string): UploadState {
  return { ...state, partitions: state.partitions.without(key), busy: withBusy(state.busy, key, false) };
}

/** Whether a partition has work the tick or the dispatch must look at. */
function hasWork(p: PartitionUploads): boolean {
  return p.pending.length > 0 || p.inFlight !== null || p.floorRetry !== null;
}

/** The busy set with `key` in it or not; the same set when that does not change it. */
function withBusy(busy: ReadonlySet<string>, key: string, member: boolean): ReadonlySet<string> {
  if (busy.has(key) === member) return busy;
  const next = new Set(busy);
  if (member) next.add(key);
  else next.delete(key);
  return next;
}

/** The busy partitions `wanted` picks, in the order the partitions joined. */
export function busyWhere(
  state: UploadState,
  wanted: (p: PartitionUploads) => boolean,
): [string, PartitionUploads][] {
  const picked = [...state.busy].filter((key) => wanted(state.partitions.get(key)!));
  return state.partitions.ordered(picked).map((key) => [key, state.partitions.get(key)!]);
}

/** Uploads in flight, orphans included (they hold a slot until they report). */
export function inFlightCount(state: UploadState): number {
  let n = state.orphans.size;
  for (const key of state.busy) if (state.partitions.get(key)!.inFlight !== null) n++;
  return n;
}

/**
 * Whether a partition's uploads are stalled: its head failed with a non-transient error, or its
 * work has waited `stallAfterMs` without the floor moving while its own attempts failed or hung,
 * whatever the error class: in a store outage the store layer retries an upload until its deadline,
 * then the core retries it, for as long as the outage lasts. Work that only queues behind other
 * partitions' uploads is not stalled.
 */
function isStalled(p: PartitionUploads, stallAfterMs: number, nowMs: number): boolean {
  if (p.stalled && p.pending.length > 0) return true;
  const waitedOut = p.waitingSinceMs !== null && nowMs - p.waitingSinceMs >= stallAfterMs;
  const hung = p.inFlight !== null && nowMs - p.inFlight.startedAtMs >= stallAfterMs;
  return waitedOut && (p.failures > 0 || p.floorRetry !== null || hung);
}

/** Gauge: the lowest offset where uploads are stalled (`isStalled`), or null. */
export function stalledOffset(state: UploadState, nowMs: number): number | null {
  let lowest: number | null = null;
  // Stalled work waits, and a partition with work waiting is busy.
  for (const key of state.busy) {
    const p = state.partitions.get(key)!;
    if (!isStalled(p, state.config.stallAfterMs, nowMs)) continue;
    // A floor command that cannot commit holds the floor itself; otherwise the head segment waits.
    const offset = p.floorRetry !== null ? p.floor : p.pending[0]?.startOffset ?? p.floor;
    lowest = lowest === null ? offset : Math.min(lowest, offset);
  }
  return lowest;
}

/** Gauge: partitions whose uploads are stalled (`isStalled`). */
export function stalledPartitions(state: UploadState, nowMs: number): number {
  let n = 0;
  for (const key of state.busy) {
    if (isStalled(state.partitions.get(key)!, state.config.stallAfterMs, nowMs)) n++;
  }
  return n;
}

/** Gauge: partitions whose floor command failed to commit and has not committed since. */
export function floorRetriesWaiting(state: UploadState): number {
  let n = 0;
  for (const key of state.busy) if (state.partitions.get(key)!.floorRetry !== null) n++;
  return n;
}
