import { assert } from "../runtime/assert.ts";
import type { RetryProfiles } from "../objectstore/retry_policy.ts";

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
  return { config, partitions: new Map(), orphans: new Set() };
}

/** A partition's record as it joins: nothing queued, nothing in flight. */
export function openedPartition(generation: number, floor: number): PartitionUploads {
  return {
    generation,
    floor,
    pending: [],
    inFlight: null,
    failures: 0,
    retryAtMs: null,
    stalled: false,
    anomaly: null,
    underPressure: false,
    floorRetry: null,
  };
}

export function withPartition(state: UploadState, key: string, record: PartitionUploads): UploadState {
  const partitions = new Map(state.partitions);
  partitions.set(key, record);
  return { ...state, partitions };
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

/** Gauge: partitions whose floor command failed to commit and has not committed since. */
export function floorRetriesWaiting(state: UploadState): number {
  let n = 0;
  for (const p of state.partitions.values()) if (p.floorRetry !== null) n++;
  return n;
}
