import { noLeader, type PartitionState, tidyPartitionState, withInSync } from "./partition_state.ts";
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
  /**
   * The epoch its first leaders take: 0, or for a topic restored from segments that carry leader
   * epochs, one above the highest of them, so that epochs keep rising along every partition's log.
   */
  firstLeaderEpoch?: number;
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
  /** `[cluster] min_insync_replicas`: below it, replicas that leave the in-sync set stay eligible. */
  minInsyncReplicas: number;
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

export function initialControllerState(defaultReplicationFactor = 3, minInsyncReplicas = 1): ControllerState {
  return {
    liveNodes: new Set(),
    registered: new Map(),
    minInsyncReplicas,
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
    const decided = decidePartition(stored.state, next.liveNodes, {
      registered: next.registered,
      minInsyncReplicas: next.minInsyncReplicas,
    });
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
    // A factor the topic names waits for that many live nodes (the node that admitted it saw
    // them; a lease may have lapsed since); the server's default takes what is live.
    if (topic.replicationFactor !== null && live.length < topic.replicationFactor) continue;
    const factor = Math.min(topic.replicationFactor ?? state.defaultReplicationFactor, live.length);
    // Each leader's epoch is bound to its process's registration.
    const leaderEpoch = topic.firstLeaderEpoch ?? 0;
    const states = assignReplicas(topic.partitions, live, factor, topic.topicId)
      .map((s, partitionId) => ({
        partitionId,
        state: tidyPartitionState({ ...s, leaderEpoch, leaderSession: state.registered.get(s.leader) }),
      }));
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

/** What an election needs beyond the live nodes: their registrations, and `min_insync_replicas`. */
export interface ElectionContext {
  /** The revision at which each live node registered; absent: no session checks (tests of the rules alone). */
  registered?: ReadonlyMap<number, number>;
  minInsyncReplicas?: number;
}

/** The state a partition should move to given the live nodes, or null when it is right as it is. */
export function decidePartition(
  current: PartitionState,
  live: ReadonlySet<number>,
  context: ElectionContext = {},
): { state: PartitionState; reason: string } | null {
  const minIsr = context.minInsyncReplicas ?? 1;
  const liveIsr = current.isr.filter((id) => live.has(id));
  // The last in-sync member stays, live or not: it holds every acknowledged record. The leader is
  // kept for that when it is among them.
  const last = current.isr.includes(current.leader) ? [current.leader] : current.isr.slice(0, 1);
  const isr = liveIsr.length > 0 ? liveIsr : last;
  const leaderLive = current.leader !== noLeader && live.has(current.leader);
  if (leaderLive && bounced(current, context.registered)) return reelect(current, live, isr, context);
  if (leaderLive) {
    if (isr.length === current.isr.length) return null;
    const state = withInSync(current, isr, minIsr);
    return { state, reason: `in-sync replicas ${current.isr} lose the gone ${diff(current.isr, isr)}` };
  }
  const inSync = current.replicas.find((id) => isr.includes(id) && live.has(id));
  // No in-sync replica is live: one that left the set while it was below the minimum holds every
  // acknowledged record too.
  const eligible = inSync === undefined
    ? current.replicas.find((id) => (current.eligible ?? []).includes(id) && live.has(id))
    : undefined;
  const candidate = inSync ?? eligible ?? noLeader;
  if (candidate === noLeader && current.leader === noLeader && isr.length === current.isr.length) return null;
  const state = elected(current, candidate, eligible === undefined ? isr : [candidate], context);
  const reason = candidate === noLeader
    ? `leader ${current.leader} is gone and no in-sync replica is live`
    : `leader ${current.leader === noLeader ? "none" : current.leader} replaced by ` +
      `${eligible === undefined ? "in-sync" : "eligible"} ${candidate}`;
  return { state, reason };
}

/** The leader's process is not the one the epoch was given to: it registered since. */
function bounced(current: PartitionState, registered: ReadonlyMap<number, number> | undefined): boolean {
  if (registered === undefined || current.leaderSession === undefined) return false;
  return registered.get(current.leader) !== current.leaderSession;
}

/** `candidate` leads the next epoch, bound to its registration, with the in-sync set `isr`. */
function elected(
  current: PartitionState,
  candidate: number,
  isr: readonly number[],
  context: ElectionContext,
): PartitionState {
  const leaderSession = candidate === noLeader ? undefined : context.registered?.get(candidate);
  const next = { ...current, leader: candidate, leaderEpoch: current.leaderEpoch + 1, leaderSession };
  return withInSync(next, isr, context.minInsyncReplicas ?? 1);
}

/**
 * The leader registered again since it was given its epoch: its process died and came back (or
 * lost its lease), so that epoch ends. The next goes to another live in-sync replica, which holds
 * every acknowledged record, or to the returned leader when none is live.
 */
function reelect(
  current: PartitionState,
  live: ReadonlySet<number>,
  isr: readonly number[],
  context: ElectionContext,
) {
  const others = current.replicas.find((id) => id !== current.leader && isr.includes(id) && live.has(id));
  const leader = others ?? current.leader;
  const state = elected(current, leader, isr, context);
  return {
    state,
    reason: `leader ${current.leader} registered again: epoch ${state.leaderEpoch} goes to ${leader}`,
  };
}

function diff(before: readonly number[], after: readonly number[]): number[] {
  return before.filter((id) => !after.includes(id));
}
