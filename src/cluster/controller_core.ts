import { checkPartitionState, noLeader, type PartitionState } from "./partition_state.ts";
import { assignReplicas } from "./replica_assignment.ts";

/**
 * A topic as the controller places it: the prefix of its partitions' keys (the partition id
 * follows it), its id, partitions and replication factor (null: the default).
 */
export interface TopicPlacement {
  keyPrefix: string;
  topicId: number;
  partitions: number;
  replicationFactor: number | null;
}

/** A partition's state as last read from etcd, with the revision that wrote it. */
export interface StoredPartition {
  state: PartitionState;
  modRevision: number;
}

/** What the controller knows: the live nodes, every partition's stored state, its writes in flight. */
export interface ControllerState {
  liveNodes: ReadonlySet<number>;
  /** The revision at which each live node registered (its key's create revision). */
  registered: ReadonlyMap<number, number>;
  partitions: ReadonlyMap<string, StoredPartition>;
  /** Keys written and not yet heard back, with the revision each write compares. */
  writing: ReadonlyMap<string, number>;
  /** The topics the metadata names, by key prefix; null until the metadata is first heard. */
  topics: ReadonlyMap<string, TopicPlacement> | null;
  /** Topics whose partition states are being created or deleted. */
  placing: ReadonlySet<string>;
  /** `[cluster] replication_factor`: a topic's replicas when it names none (at most the live nodes). */
  defaultReplicationFactor: number;
}

export type ControllerEvent =
  /** The nodes registered under their leases now. */
  | { kind: "nodes"; live: readonly number[]; registered?: ReadonlyMap<number, number> }
  /** A partition's key changed (null: deleted, with its topic). */
  | { kind: "partition"; key: string; stored: StoredPartition | null }
  /** A write did not apply (its compare failed, or it failed): the watch brings the truth. */
  | { kind: "writeFailed"; key: string }
  /** The metadata's topics now. */
  | { kind: "topics"; topics: readonly TopicPlacement[] }
  /** A topic's states were not created or deleted: decided again at the next event. */
  | { kind: "placementFailed"; topicKey: string };

/** Write `state` at `key` if the key is still at `expectedModRevision`. */
export interface WritePartition {
  kind: "writePartition";
  key: string;
  state: PartitionState;
  expectedModRevision: number;
  reason: string;
}

/** Create every partition state of a new topic (each key, `topicKey` and its id, compared absent). */
export interface CreatePartitions {
  kind: "createPartitions";
  topicKey: string;
  states: Array<{ partitionId: number; state: PartitionState }>;
}

/** Delete every partition state of a topic the metadata no longer names. */
export interface DeletePartitions {
  kind: "deletePartitions";
  topicKey: string;
}

export type ControllerEffect = WritePartition | CreatePartitions | DeletePartitions;

export interface ControllerStep {
  state: ControllerState;
  effects: ControllerEffect[];
}

export function initialControllerState(defaultReplicationFactor = 3): ControllerState {
  return {
    liveNodes: new Set(),
    registered: new Map(),
    partitions: new Map(),
    writing: new Map(),
    topics: null,
    placing: new Set(),
    defaultReplicationFactor,
  };
}

/** The prefix of a partition key that names its topic: everything up to the partition id. */
export function topicKeyOf(partitionKey: string): string {
  return partitionKey.slice(0, partitionKey.lastIndexOf("/") + 1);
}

/**
 * The controller's decisions, one event at a time. After each event every partition is held to
 * one rule: a node that is gone leaves the in-sync set (never its last member, which stays so it
 * can lead again when it returns: no unclean election), and a partition whose leader is gone gets
 * the first live in-sync replica in replica order as leader, under the next epoch, or no leader.
 * One write per partition is in flight at a time; each compares the revision it was decided on.
 */
export function controllerStep(state: ControllerState, event: ControllerEvent): ControllerStep {
  if (event.kind === "topics" || event.kind === "placementFailed") return placementStep(state, event);
  const next: ControllerState = {
    ...state,
    partitions: new Map(state.partitions),
    writing: new Map(state.writing),
  };
  const partitions = next.partitions as Map<string, StoredPartition>;
  const writing = next.writing as Map<string, number>;
  let keys: Iterable<string>;
  switch (event.kind) {
    case "nodes":
      next.liveNodes = new Set(event.live);
      next.registered = event.registered ?? new Map();
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
  const effects: ControllerEffect[] = [];
  for (const key of keys) {
    const stored = partitions.get(key);
    if (stored === undefined || writing.has(key)) continue;
    const bounced = (next.registered.get(stored.state.leader) ?? 0) > stored.modRevision;
    const decided = decidePartition(stored.state, next.liveNodes, bounced);
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
  // New live nodes may let a topic waiting for replicas be placed; heard states end a placement.
  const placed = placementStep(next, { kind: "placementFailed", topicKey: "" });
  return { state: placed.state, effects: [...effects, ...placed.effects] };
}

/**
 * Topics the metadata names without partition states get them (replicas over the live nodes,
 * `assignReplicas`, starting at the topic id to spread leaders); partition states of topics it
 * no longer names are deleted. One placement per topic in flight; a placement ends once the
 * states it wrote (or their absence) are heard.
 */
function placementStep(
  state: ControllerState,
  event: Extract<ControllerEvent, { kind: "topics" | "placementFailed" }>,
): ControllerStep {
  const topics = event.kind === "topics" ? new Map(event.topics.map((t) => [t.keyPrefix, t])) : state.topics;
  if (topics === null) return { state, effects: [] };
  const placing = new Set(state.placing);
  if (event.kind === "placementFailed") placing.delete(event.topicKey);
  const statesOf = new Map<string, number>();
  for (const key of state.partitions.keys()) {
    const topicKey = topicKeyOf(key);
    statesOf.set(topicKey, (statesOf.get(topicKey) ?? 0) + 1);
  }
  const effects: ControllerEffect[] = [];
  for (const [topicKey, topic] of topics) {
    const stored = statesOf.get(topicKey) ?? 0;
    if (stored >= topic.partitions) placing.delete(topicKey);
    if (stored > 0 || placing.has(topicKey) || state.liveNodes.size === 0) continue;
    const live = [...state.liveNodes];
    const factor = Math.min(topic.replicationFactor ?? state.defaultReplicationFactor, live.length);
    const states = assignReplicas(topic.partitions, live, factor, topic.topicId)
      .map((s, partitionId) => ({ partitionId, state: s }));
    placing.add(topicKey);
    effects.push({ kind: "createPartitions", topicKey, states });
  }
  for (const topicKey of statesOf.keys()) {
    if (topics.has(topicKey) || placing.has(topicKey)) continue;
    placing.add(topicKey);
    effects.push({ kind: "deletePartitions", topicKey });
  }
  for (const topicKey of [...placing]) {
    if (!topics.has(topicKey) && !statesOf.has(topicKey)) placing.delete(topicKey);
  }
  return { state: { ...state, topics, placing }, effects };
}

/** The state a partition should move to given the live nodes, or null when it is right as it is. */
export function decidePartition(
  current: PartitionState,
  live: ReadonlySet<number>,
  leaderBounced = false,
): { state: PartitionState; reason: string } | null {
  const liveIsr = current.isr.filter((id) => live.has(id));
  // The last in-sync member stays, live or not: it holds every acknowledged record. The leader is
  // kept for that when it is among them.
  const last = current.isr.includes(current.leader) ? [current.leader] : current.isr.slice(0, 1);
  const isr = liveIsr.length > 0 ? liveIsr : last;
  const leaderLive = current.leader !== noLeader && live.has(current.leader);
  if (leaderLive && leaderBounced) return reelect(current, live, isr);
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

/**
 * The leader registered again since its state was written: its process died and came back (or lost
 * its lease), so the epoch it led under ends. The next goes to another live in-sync replica, which
 * holds every acknowledged record, or to the returned leader when none is live.
 */
function reelect(current: PartitionState, live: ReadonlySet<number>, isr: readonly number[]) {
  const others = current.replicas.find((id) => id !== current.leader && isr.includes(id) && live.has(id));
  const leader = others ?? current.leader;
  const state = checkPartitionState({
    ...current,
    leader,
    leaderEpoch: current.leaderEpoch + 1,
    isr: [...isr],
  });
  return {
    state,
    reason: `leader ${current.leader} registered again: epoch ${state.leaderEpoch} goes to ${leader}`,
  };
}

function diff(before: readonly number[], after: readonly number[]): number[] {
  return before.filter((id) => !after.includes(id));
}
