import { unreachable } from "../../runtime/assert.ts";
import { GroupDraft, syncRefusal } from "./group_draft.ts";
import type {
  CommitEvent,
  GroupError,
  GroupEvent,
  GroupStep,
  HeartbeatEvent,
  LeaveEvent,
  LeavingMember,
  SyncEvent,
} from "./group_events.ts";
import { join, maybeCompleteJoin, prepareRebalance } from "./group_join.ts";
import type { GroupMember, GroupSettings, GroupState } from "./group_state.ts";

/**
 * The group coordinator's decisions for one group, one event at a time: `(state, event, nowMs) →
 * {state, effects}`, with no I/O and no clock of its own. Every request is answered by an
 * `answer` effect, at once or when the rebalance it waits for completes; `persist` asks the shell
 * to write the group's metadata to the offsets topic.
 */
export function stepGroup(
  state: GroupState,
  event: GroupEvent,
  nowMs: number,
  settings: GroupSettings,
): GroupStep {
  const draft = new GroupDraft(state, nowMs, settings);
  switch (event.kind) {
    case "join":
      join(draft, event);
      break;
    case "sync":
      sync(draft, event);
      break;
    case "heartbeat":
      heartbeat(draft, event);
      break;
    case "leave":
      leave(draft, event);
      break;
    case "commit":
      commit(draft, event);
      break;
    case "tick":
      tick(draft);
      break;
    default:
      unreachable(event, "a group event");
  }
  return { state: draft.freeze(), effects: draft.effects };
}

/**
 * The check a request naming a member and a generation passes first: the member is known, holds
 * its static id, and is of the current generation.
 */
function memberCheck(
  draft: GroupDraft,
  e: { memberId: string; groupInstanceId: string | null; generation: number },
): { member: GroupMember; error: null } | { member: null; error: GroupError } {
  if (draft.phase === "dead") return { member: null, error: "coordinator_not_available" };
  const member = draft.members.get(e.memberId);
  if (member === undefined) return { member: null, error: "unknown_member_id" };
  if (e.groupInstanceId !== null && draft.staticMembers.get(e.groupInstanceId) !== e.memberId) {
    return { member: null, error: "fenced_instance_id" };
  }
  if (e.generation !== draft.generation) return { member: null, error: "illegal_generation" };
  return { member, error: null };
}

/**
 * SyncGroup: the leader's sync carries every member's assignment and makes the group stable,
 * answering the syncs that waited for it; a follower's waits for the leader's, or in a stable group
 * is answered its assignment at once.
 */
function sync(draft: GroupDraft, e: SyncEvent): void {
  const { member, error } = memberCheck(draft, e);
  if (error !== null) return draft.answer(e.requestId, syncRefusal(error));
  if (draft.phase === "preparing_rebalance") {
    return draft.answer(e.requestId, syncRefusal("rebalance_in_progress"));
  }
  if (draft.phase === "stable") {
    draft.update(member.memberId, { sessionDeadlineMs: draft.sessionFrom(member) });
    return draft.answer(e.requestId, syncAnswer(draft, member.assignment));
  }
  if (member.syncRequest !== null) draft.answer(member.syncRequest, syncRefusal("rebalance_in_progress"));
  draft.update(member.memberId, { syncRequest: e.requestId, sessionDeadlineMs: draft.sessionFrom(member) });
  if (member.memberId !== draft.leaderId) return;
  for (const other of [...draft.members.values()]) {
    const assignment = e.assignments.get(other.memberId) ?? new Uint8Array(0);
    if (other.syncRequest !== null) draft.answer(other.syncRequest, syncAnswer(draft, assignment));
    draft.update(other.memberId, { assignment, syncRequest: null });
  }
  draft.enter("stable");
  draft.rebalanceDeadlineMs = null;
  draft.persist();
}

function syncAnswer(draft: GroupDraft, assignment: Uint8Array) {
  return {
    kind: "sync" as const,
    error: null,
    protocolType: draft.protocolType,
    protocol: draft.protocol,
    assignment,
  };
}

/**
 * Heartbeat: keeps a member's session; during a join phase it answers REBALANCE_IN_PROGRESS, the
 * member's cue to join again.
 */
function heartbeat(draft: GroupDraft, e: HeartbeatEvent): void {
  const { member, error } = memberCheck(draft, e);
  if (error !== null) return draft.answer(e.requestId, { kind: "heartbeat", error });
  draft.update(member.memberId, { sessionDeadlineMs: draft.sessionFrom(member) });
  const rebalancing = draft.phase === "preparing_rebalance";
  draft.answer(e.requestId, { kind: "heartbeat", error: rebalancing ? "rebalance_in_progress" : null });
}

/** LeaveGroup: each member named leaves (by member id, or by static id); the rest rebalance. */
function leave(draft: GroupDraft, e: LeaveEvent): void {
  const answers: (LeavingMember & { error: GroupError | null })[] = [];
  let left = 0;
  for (const leaving of e.members) {
    const memberId = leaving.groupInstanceId === null
      ? leaving.memberId
      : draft.staticMembers.get(leaving.groupInstanceId);
    const fenced = leaving.groupInstanceId !== null && memberId !== undefined && leaving.memberId !== "" &&
      leaving.memberId !== memberId;
    const error: GroupError | null = fenced
      ? "fenced_instance_id"
      : memberId === undefined || !draft.members.has(memberId)
      ? "unknown_member_id"
      : null;
    answers.push({ ...leaving, error });
    if (error !== null) continue;
    draft.remove(memberId!);
    left += 1;
  }
  draft.answer(e.requestId, { kind: "leave", error: null, members: answers });
  if (left > 0) membersLeft(draft);
}

/** After members left or lapsed: a rebalance, or the one under way may now complete. */
function membersLeft(draft: GroupDraft): void {
  if (draft.phase === "preparing_rebalance") return maybeCompleteJoin(draft);
  if (draft.phase === "stable" || draft.phase === "completing_rebalance") prepareRebalance(draft);
}

/**
 * OffsetCommit's check before its offsets are stored: a standalone commit (generation -1, no member)
 * to an empty group; otherwise a member of the current generation, outside the wait for the
 * leader's assignment. A commit keeps the member's session, as a heartbeat does.
 */
function commit(draft: GroupDraft, e: CommitEvent): void {
  if (draft.phase === "dead") {
    return draft.answer(e.requestId, { kind: "commit", error: "coordinator_not_available" });
  }
  if (e.generation < 0 && e.memberId === "" && draft.phase === "empty") {
    return draft.answer(e.requestId, { kind: "commit", error: null });
  }
  const { member, error } = memberCheck(draft, e);
  if (error !== null) return draft.answer(e.requestId, { kind: "commit", error });
  draft.update(member.memberId, { sessionDeadlineMs: draft.sessionFrom(member) });
  const waiting = draft.phase === "completing_rebalance";
  draft.answer(e.requestId, { kind: "commit", error: waiting ? "rebalance_in_progress" : null });
}

/**
 * Time passing: member ids given out lapse, sessions end (members with a join or sync waiting are
 * kept), a join phase completes at its deadline, and members that have not sent their sync by the
 * completing phase's deadline are dropped.
 */
function tick(draft: GroupDraft): void {
  const now = draft.nowMs;
  for (const [memberId, lapsesMs] of [...draft.pendingMembers]) {
    if (lapsesMs <= now) draft.pendingMembers.delete(memberId);
  }
  let lapsed = 0;
  for (const member of [...draft.members.values()]) {
    const kept = member.joinRequest !== null || member.syncRequest !== null;
    if (!kept && member.sessionDeadlineMs <= now) {
      draft.remove(member.memberId);
      lapsed += 1;
    }
  }
  if (draft.phase === "completing_rebalance" && draft.rebalanceDeadlineMs! <= now) {
    for (const member of [...draft.members.values()]) {
      if (member.syncRequest === null) {
        draft.remove(member.memberId);
        lapsed += 1;
      }
    }
  }
  if (lapsed > 0) return membersLeft(draft);
  if (draft.phase === "preparing_rebalance") maybeCompleteJoin(draft);
}
