import { checkPartitionState, noLeader, type PartitionState } from "./partition_state.ts";

/** A partition's state as last read from etcd, with the revision that wrote it. */
export interface StoredPartition {
  state: PartitionState;
  modRevision: number;
}

/** What the controller knows: the live nodes, every partition's stored state, its writes in flight. */
export interface ControllerState {
  liveNodes: ReadonlySet<number>;
  partitions: ReadonlyMap<string, StoredPartition>;
  /** Keys written and not yet heard back, with the revision each write compares. */
  writing: ReadonlyMap<string, number>;
}

export type ControllerEvent =
  /** The nodes registered under their leases now. */
  | { kind: "nodes"; live: readonly number[] }
  /** A partition's key changed (null: deleted, with its topic). */
  | { kind: "partition"; key: string; stored: StoredPartition | null }
  /** A write did not apply (its compare failed, or it failed): the watch brings the truth. */
  | { kind: "writeFailed"; key: string };

/** Write `state` at `key` if the key is still at `expectedModRevision`. */
export interface WritePartition {
  kind: "writePartition";
  key: string;
  state: PartitionState;
  expectedModRevision: number;
  reason: string;
}

export interface ControllerStep {
  state: ControllerState;
  effects: WritePartition[];
}

export function initialControllerState(): ControllerState {
  return { liveNodes: new Set(), partitions: new Map(), writing: new Map() };
}

/**
 * The controller's decisions, one event at a time. After each event every partition is held to
 * one rule: a node that is gone leaves the in-sync set (never its last member, which stays so it
 * can lead again when it returns: no unclean election), and a partition whose leader is gone gets
 * the first live in-sync replica in replica order as leader, under the next epoch, or no leader.
 * One write per partition is in flight at a time; each compares the revision it was decided on.
 */
export function controllerStep(state: ControllerState, event: ControllerEvent): ControllerStep {
  const next: ControllerState = {
    liveNodes: state.liveNodes,
    partitions: new Map(state.partitions),
    writing: new Map(state.writing),
  };
  const partitions = next.partitions as Map<string, StoredPartition>;
  const writing = next.writing as Map<string, number>;
  let keys: Iterable<string>;
  switch (event.kind) {
    case "nodes":
      next.liveNodes = new Set(event.live);
      keys = partitions.keys();
      break;
    case "partition":
      if (event.stored === null) partitions.delete(event.key);
      else partitions.set(event.key, event.stored);
      // Heard back: a later revision than the one the write compared ends it.
      if (event.stored === null || event.stored.modRevision > (writing.get(event.key) ?? Infinity)) {
        writing.delete(event.key);
      }
      keys = [event.key];
      break;
    case "writeFailed":
      writing.delete(event.key);
      keys = [event.key];
      break;
  }
  const effects: WritePartition[] = [];
  for (const key of keys) {
    const stored = partitions.get(key);
    if (stored === undefined || writing.has(key)) continue;
    const decided = decidePartition(stored.state, next.liveNodes);
    if (decided === null) continue;
    writing.set(key, stored.modRevision);
    effects.push({
      kind: "writePartition",
      key,
      state: decided.state,
      expectedModRevision: stored.modRevision,
      reason: decided.reason,
    });
  }
  return { state: next, effects };
}

/** The state a partition should move to given the live nodes, or null when it is right as it is. */
export function decidePartition(
  current: PartitionState,
  live: ReadonlySet<number>,
): { state: PartitionState; reason: string } | null {
  const liveIsr = current.isr.filter((id) => live.has(id));
  // The last in-sync member stays, live or not: it holds every acknowledged record. The leader is
  // kept for that when it is among them.
  const last = current.isr.includes(current.leader) ? [current.leader] : current.isr.slice(0, 1);
  const isr = liveIsr.length > 0 ? liveIsr : last;
  const leaderLive = current.leader !== noLeader && live.has(current.leader);
  if (leaderLive) {
    if (isr.length === current.isr.length) return null;
    const state = checkPartitionState({ ...current, isr });
    return { state, reason: `in-sync replicas ${current.isr} lose the gone ${diff(current.isr, isr)}` };
  }
  const candidate = current.replicas.find((id) => isr.includes(id) && live.has(id)) ?? noLeader;
  if (candidate === noLeader && current.leader === noLeader && isr.length === current.isr.length) return null;
  const state = checkPartitionState({
    ...current,
    leader: candidate,
    leaderEpoch: current.leaderEpoch + 1,
    isr,
  });
  const reason = candidate === noLeader
    ? `leader ${current.leader} is gone and no in-sync replica is live`
    : `leader ${current.leader === noLeader ? "none" : current.leader} replaced by in-sync ${candidate}`;
  return { state, reason };
}

function diff(before: readonly number[], after: readonly number[]): number[] {
  return before.filter((id) => !after.includes(id));
}
