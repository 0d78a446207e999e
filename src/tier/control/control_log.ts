import type { AdvanceDeletedUpTo, AdvanceTieredFloor } from "../../log/retention/floor_state.ts";
import type { ReplaceRemoteSegments } from "../../log/segment/segment_replacement.ts";

/**
 * Commands of the partition state machines a shard owns: the tiered floor, in a cluster the
 * watermark total retention deleted below, and replaces of remote segments (the merger's).
 */
export type ControlCommand = AdvanceTieredFloor | AdvanceDeletedUpTo | ReplaceRemoteSegments;

/** Hears every committed command once per replay or commit, in index order. */
export type ApplyHook = (index: number, command: ControlCommand) => Promise<void>;

/** What a submission requires of the log at the moment it commits. */
export interface SubmitPrecondition {
  /**
   * The epoch the submitter holds (as a partition leader): the command commits only while the log
   * is still at it, so a deposed leader's commands never commit.
   */
  expectedEpoch: number;
}

/** A submission's precondition failed: the log's epoch is no longer the submitter's. */
export class ControlEpochMismatchError extends Error {
  override name = "ControlEpochMismatchError";
  readonly expectedEpoch: number;
  readonly epoch: number;
  constructor(expectedEpoch: number, epoch: number) {
    super(`Cannot submit a control command: the control log is at epoch ${epoch}, not ${expectedEpoch}`);
    this.expectedEpoch = expectedEpoch;
    this.epoch = epoch;
  }
}

/** A submission reached a control log that is closing or closed: the server is stopping. */
export class ControlLogClosedError extends Error {
  override name = "ControlLogClosedError";
  constructor() {
    super("Cannot submit a control command: the control log is closed");
  }
}

/**
 * A shard's control log, separate from the data logs: the commands of its partitions' state
 * machines, committed in one order. The tier service only submits commands and learns of them
 * through the apply hook, so it never knows which implementation it has (docs/DESIGN.md, "The
 * control log"). Two implement it: a single node's local fsynced log (`LocalControlLog`), whose
 * epoch never changes, and a cluster's `ReplicatedControlLog`, which keeps each partition's floor in
 * etcd, has no epoch of its own (0) and commits only while the partition's leader epoch is still
 * the one the submission names.
 */
export interface ControlLog {
  /** The epoch commands commit under now; a submitter reads it once, when it starts to lead. */
  epoch(): number;
  /**
   * Applies every committed command the log still holds through `apply`, in order, and resolves
   * once they are applied; every later commit goes through `apply` too. Called once, before the
   * first submission. Apply hooks must be idempotent: a replay repeats what was applied before.
   */
  replay(apply: ApplyHook): Promise<void>;
  /**
   * Commits the command durably if `precondition` holds, applies it, and resolves with its index.
   * Rejects with `ControlEpochMismatchError` when the epoch moved, and with the failure's error
   * when the command could not be made durable (then it may or may not commit later).
   */
  submit(command: ControlCommand, precondition: SubmitPrecondition): Promise<number>;
  /**
   * In a cluster, the partition's committed replaces, read now: a replica that joins after the
   * replay (a new or rebuilt one) applies them, as the replay would have. Absent on a single node,
   * whose partitions are all there at the replay.
   */
  committedReplaces?(partition: string): Promise<ReplaceRemoteSegments[]>;
  /** Index of the last committed command (0 when none). */
  committed(): number;
  /** Everything up to `index` is captured by the state machines' own durable snapshots (superblocks). */
  snapshot(index: number): Promise<void>;
  close(): Promise<void>;
}
