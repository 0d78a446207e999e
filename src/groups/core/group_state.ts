/**
 * A consumer group as its coordinator holds it: Kafka's classic group protocol, with eager
 * rebalancing and the assignment made by the client chosen as leader. The state is plain data, read
 * and replaced by the pure steps of `group_core.ts`.
 */

/** The group's phase, as Kafka names its states. */
export type GroupPhase = "empty" | "preparing_rebalance" | "completing_rebalance" | "stable" | "dead";

/** One protocol a member supports (an assignor's name) with its metadata (the subscription). */
export interface GroupProtocol {
  name: string;
  metadata: Uint8Array;
}

export interface GroupMember {
  memberId: string;
  /** `group.instance.id` of a static member; null for a dynamic one. */
  groupInstanceId: string | null;
  clientId: string;
  clientHost: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  /** In the member's order of preference. */
  protocols: readonly GroupProtocol[];
  /** What the leader assigned it in the current generation; empty before. */
  assignment: Uint8Array;
  /** The request id of its join waiting for the rebalance to complete, or null. */
  joinRequest: number | null;
  /** The request id of its sync waiting for the leader's assignment, or null. */
  syncRequest: number | null;
  /** When its session ends without a heartbeat, a join, a sync or a commit (ms). */
  sessionDeadlineMs: number;
}

export interface GroupState {
  groupId: string;
  phase: GroupPhase;
  /** Bumped by every completed rebalance; 0 for a group that has never had one. */
  generation: number;
  /** "consumer" for Kafka's consumers; null while the group is empty. */
  protocolType: string | null;
  /** The protocol chosen for the generation; null while empty. */
  protocol: string | null;
  leaderId: string | null;
  /** By member id, in the order they joined. */
  members: ReadonlyMap<string, GroupMember>;
  /** Member ids given out with MEMBER_ID_REQUIRED, each with when it lapses unused (ms). */
  pendingMembers: ReadonlyMap<string, number>;
  /** Static members: `group.instance.id` to the member id that holds it now. */
  staticMembers: ReadonlyMap<string, string>;
  /**
   * While preparing: when the join phase completes at the latest. While completing: when members
   * that have not sent their sync are dropped. Null otherwise.
   */
  rebalanceDeadlineMs: number | null;
  /**
   * While preparing a group's first generation from empty: the latest the initial delay may be
   * extended to (the first member's rebalance timeout); null otherwise.
   */
  initialDelayLimitMs: number | null;
  /** When the group entered its phase (ms), as DescribeGroups and the HTTP API report it. */
  phaseSinceMs: number;
}

/** The limits the group steps obey (the `[groups]` settings). */
export interface GroupSettings {
  /** `group_members_max`: members and pending member ids together, per group. */
  membersMax: number;
  /** `group_min_session_timeout` and `group_max_session_timeout`: a join outside is refused. */
  sessionTimeoutMinMs: number;
  sessionTimeoutMaxMs: number;
  /**
   * `group_initial_rebalance_delay`: how long an empty group's first rebalance waits for more
   * members, extended by as much for each that joins, up to the rebalance timeout.
   */
  initialRebalanceDelayMs: number;
}

/** A group that does not exist yet: empty, generation 0. */
export function emptyGroup(groupId: string, nowMs: number): GroupState {
  return {
    groupId,
    phase: "empty",
    generation: 0,
    protocolType: null,
    protocol: null,
    leaderId: null,
    members: new Map(),
    pendingMembers: new Map(),
    staticMembers: new Map(),
    rebalanceDeadlineMs: null,
    initialDelayLimitMs: null,
    phaseSinceMs: nowMs,
  };
}

/**
 * When the group next needs a step with no request (a session ending, a rebalance's deadline, a
 * pending member id lapsing): the earliest of them, or Infinity when nothing is due.
 */
export function groupDueMs(state: GroupState): number {
  let due = state.rebalanceDeadlineMs ?? Infinity;
  for (const member of state.members.values()) {
    if (!awaitsAnswer(member)) due = Math.min(due, member.sessionDeadlineMs);
  }
  for (const lapsesMs of state.pendingMembers.values()) due = Math.min(due, lapsesMs);
  return due;
}

/** A member with a join or sync waiting is kept alive until it is answered, as Kafka keeps it. */
export function awaitsAnswer(member: GroupMember): boolean {
  return member.joinRequest !== null || member.syncRequest !== null;
}

/** The members in join order, for answers and views. */
export function membersOf(state: GroupState): GroupMember[] {
  return [...state.members.values()];
}
