import type { GroupProtocol, GroupState } from "./group_state.ts";

/**
 * The refusals of the group protocol, as Kafka's error codes name them (the Kafka listener maps
 * each to its code; the HTTP API to a status).
 */
export type GroupError =
  | "unknown_member_id"
  | "illegal_generation"
  | "rebalance_in_progress"
  | "inconsistent_group_protocol"
  | "invalid_session_timeout"
  | "member_id_required"
  | "group_max_size_reached"
  | "fenced_instance_id"
  | "coordinator_not_available"
  // The coordinator's, never the group core's:
  | "not_coordinator"
  | "coordinator_load_in_progress"
  | "invalid_group_id"
  | "group_id_not_found"
  | "non_empty_group"
  | "offset_metadata_too_large"
  | "unknown_topic_or_partition"
  /** TxnOffsetCommit of a producer older than the one whose offsets are pending. */
  | "invalid_producer_epoch"
  /** OffsetFetch of stable offsets while a transaction's is pending. */
  | "unstable_offset_commit"
  | "unknown_server_error";

/** A join as JoinGroup carries it; `generatedMemberId` is the id a new member gets. */
export interface JoinEvent {
  kind: "join";
  requestId: number;
  memberId: string;
  generatedMemberId: string;
  groupInstanceId: string | null;
  clientId: string;
  clientHost: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  protocolType: string;
  protocols: readonly GroupProtocol[];
  /** JoinGroup 4 and later: a new dynamic member is first given its id (MEMBER_ID_REQUIRED). */
  requireKnownMemberId: boolean;
}

export interface SyncEvent {
  kind: "sync";
  requestId: number;
  memberId: string;
  groupInstanceId: string | null;
  generation: number;
  /** The leader's assignment by member id; empty from the others. */
  assignments: ReadonlyMap<string, Uint8Array>;
}

export interface HeartbeatEvent {
  kind: "heartbeat";
  requestId: number;
  memberId: string;
  groupInstanceId: string | null;
  generation: number;
}

/** One member leaving, by member id or by `group.instance.id` (LeaveGroup 3 names several). */
export interface LeavingMember {
  memberId: string;
  groupInstanceId: string | null;
}

export interface LeaveEvent {
  kind: "leave";
  requestId: number;
  members: readonly LeavingMember[];
}

/** An offset commit, checked against the generation before the shell stores its offsets. */
export interface CommitEvent {
  kind: "commit";
  requestId: number;
  memberId: string;
  groupInstanceId: string | null;
  /** -1 for a commit outside group management (a standalone consumer's). */
  generation: number;
}

export type GroupEvent =
  | JoinEvent
  | SyncEvent
  | HeartbeatEvent
  | LeaveEvent
  | CommitEvent
  | { kind: "tick" };

/** What JoinGroup answers a member. */
export interface JoinAnswer {
  kind: "join";
  error: GroupError | null;
  generation: number;
  protocolType: string | null;
  protocol: string | null;
  leaderId: string;
  memberId: string;
  /** To the leader only: every member with its metadata for the chosen protocol. */
  members: readonly { memberId: string; groupInstanceId: string | null; metadata: Uint8Array }[];
}

export interface SyncAnswer {
  kind: "sync";
  error: GroupError | null;
  protocolType: string | null;
  protocol: string | null;
  assignment: Uint8Array;
}

export type GroupAnswer =
  | JoinAnswer
  | SyncAnswer
  | { kind: "heartbeat"; error: GroupError | null }
  | {
    kind: "leave";
    error: GroupError | null;
    members: readonly (LeavingMember & { error: GroupError | null })[];
  }
  | { kind: "commit"; error: GroupError | null };

export type GroupEffect =
  /** Answer the request `requestId` (now, or one that waited). */
  | { kind: "answer"; requestId: number; answer: GroupAnswer }
  /** The group's metadata changed in a way a new coordinator must know: write it to the log. */
  | { kind: "persist" };

export interface GroupStep {
  state: GroupState;
  effects: GroupEffect[];
}
