import { assert } from "../../runtime/assert.ts";
import type { PartitionState } from "../controller/partition_state.ts";

/** What a leader knows of one follower, from its fetches. */
export interface FollowerProgress {
  /** The offset of its last fetch: everything below it is in its log. -1 before its first fetch. */
  fetchOffset: number;
  /** When it last fetched from at or past the leader's log end (ms, the leader's clock). */
  caughtUpAtMs: number;
}

/** A leader's replication state for one partition. */
export interface LeaderState {
  leaderId: number;
  leaderEpoch: number;
  /** The partition's state as stored, with the revision an in-sync change compares. */
  stored: PartitionState;
  storedModRevision: number;
  logEndOffset: number;
  highWatermark: number;
  followers: ReadonlyMap<number, FollowerProgress>;
  /** An in-sync change is being written: no other until it is heard back. */
  isrWriting: boolean;
}

export type LeaderEvent =
  | { kind: "fetched"; replicaId: number; fetchOffset: number }
  | { kind: "appended"; logEndOffset: number }
  | { kind: "tick" }
  | { kind: "stored"; state: PartitionState; modRevision: number }
  | { kind: "isrWriteFailed" };

export type LeaderEffect =
  | { kind: "setHighWatermark"; highWatermark: number }
  | { kind: "writeIsr"; isr: number[]; expectedModRevision: number; reason: string };

export interface LeaderSettings {
  replicaLagMaxMs: number;
  /**
   * `[cluster] min_insync_replicas` (at most the partition's replicas): with fewer in sync the high
   * watermark stays where it is, so that replicas that left the set then (eligible) hold everything
   * below it. Absent: 1.
   */
  minInsyncReplicas?: number;
}

/** A leader's state when it starts to lead under `stored`'s epoch, its log at `logEndOffset`. */
export function startLeading(
  stored: PartitionState,
  storedModRevision: number,
  logEndOffset: number,
  highWatermark: number,
  nowMs: number,
): LeaderState {
  assert(highWatermark <= logEndOffset, `a high watermark ${highWatermark} past the log end ${logEndOffset}`);
  const followers = new Map<number, FollowerProgress>();
  // A new leader gives every follower the lag allowance from now: none has fetched from it yet.
  for (const id of stored.replicas) {
    if (id !== stored.leader) followers.set(id, { fetchOffset: -1, caughtUpAtMs: nowMs });
  }
  return {
    leaderId: stored.leader,
    leaderEpoch: stored.leaderEpoch,
    stored,
    storedModRevision,
    logEndOffset,
    highWatermark,
    followers,
    isrWriting: false,
  };
}

/**
 * The leader's replication decisions for one partition, one event at a time (Kafka's rules):
 * - the high watermark is the smallest log end over the in-sync set (a follower's log end is the
 *   offset it last fetched from); it never goes back, and stays while fewer than
 *   `minInsyncReplicas` are in sync (KIP-966): what the eligible replicas lack is never committed;
 * - a follower is caught up when it fetches from at or past the leader's log end; one that has
 *   not been caught up for `replicaLagMaxMs` leaves the in-sync set;
 * - a follower outside the set that fetches from at or past the high watermark rejoins it;
 * - in-sync changes are written to etcd one at a time, each comparing the stored revision, and
 *   take effect only once heard back (`stored`); the leader never removes itself.
 */
export function leaderStep(
  state: LeaderState,
  event: LeaderEvent,
  nowMs: number,
  settings: LeaderSettings,
): { state: LeaderState; effects: LeaderEffect[] } {
  let next = state;
  switch (event.kind) {
    case "fetched": {
      const progress = state.followers.get(event.replicaId);
      if (progress === undefined) return { state, effects: [] };
      const fetchOffset = Math.min(event.fetchOffset, state.logEndOffset);
      const caughtUpAtMs = event.fetchOffset >= state.logEndOffset ? nowMs : progress.caughtUpAtMs;
      const followers = new Map(state.followers).set(event.replicaId, { fetchOffset, caughtUpAtMs });
      next = { ...state, followers };
      break;
    }
    case "appended":
      next = { ...state, logEndOffset: Math.max(state.logEndOffset, event.logEndOffset) };
      break;
    case "stored":
      if (event.modRevision <= state.storedModRevision) return { state, effects: [] };
      next = { ...state, stored: event.state, storedModRevision: event.modRevision, isrWriting: false };
      break;
    case "isrWriteFailed":
      next = { ...state, isrWriting: false };
      break;
    case "tick":
      break;
  }
  const effects: LeaderEffect[] = [];
  const highWatermark = inSyncEnough(next.stored, settings.minInsyncReplicas ?? 1)
    ? Math.max(next.highWatermark, highWatermarkOf(next))
    : next.highWatermark;
  if (highWatermark !== next.highWatermark) {
    next = { ...next, highWatermark };
    effects.push({ kind: "setHighWatermark", highWatermark });
  }
  const fetchedBy = event.kind === "fetched" ? event.replicaId : null;
  const change = next.isrWriting ? null : isrChange(next, nowMs, settings, fetchedBy);
  if (change !== null) {
    next = { ...next, isrWriting: true };
    effects.push({ kind: "writeIsr", ...change, expectedModRevision: next.storedModRevision });
  }
  return { state: next, effects };
}

/** At least `minInsyncReplicas` in sync, or every replica when the partition has fewer. */
export function inSyncEnough(state: PartitionState, minInsyncReplicas: number): boolean {
  return state.isr.length >= Math.min(minInsyncReplicas, state.replicas.length);
}

/** The smallest log end over the in-sync replicas (the leader's own is its log end). */
export function highWatermarkOf(state: LeaderState): number {
  let low = state.logEndOffset;
  for (const id of state.stored.isr) {
    if (id === state.leaderId) continue;
    const progress = state.followers.get(id);
    low = Math.min(low, progress === undefined ? -1 : progress.fetchOffset);
  }
  return Math.max(low, 0);
}

/**
 * The in-sync set the leader wants now, or null when it is right. A follower rejoins only on a
 * fetch of its own (`fetchedBy`): a node that stopped fetching is never let back in on what it
 * did before.
 */
function isrChange(state: LeaderState, nowMs: number, settings: LeaderSettings, fetchedBy: number | null) {
  const isr = state.stored.isr;
  const lagging = isr.filter((id) => {
    if (id === state.leaderId) return false;
    const progress = state.followers.get(id);
    return progress === undefined || nowMs - progress.caughtUpAtMs > settings.replicaLagMaxMs;
  });
  if (lagging.length > 0) {
    return {
      isr: isr.filter((id) => !lagging.includes(id)),
      reason: `${lagging} not caught up for over ${settings.replicaLagMaxMs} ms`,
    };
  }
  const progress = fetchedBy === null ? undefined : state.followers.get(fetchedBy);
  const returning = progress !== undefined && fetchedBy !== null && !isr.includes(fetchedBy) &&
      progress.fetchOffset >= 0 && progress.fetchOffset >= state.highWatermark
    ? [fetchedBy]
    : [];
  if (returning.length > 0) {
    return { isr: [...isr, ...returning], reason: `${returning} caught up to the high watermark` };
  }
  return null;
}
