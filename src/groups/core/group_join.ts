import { assert } from "../../runtime/assert.ts";
import { type GroupDraft, syncRefusal } from "./group_draft.ts";
import type { JoinAnswer, JoinEvent } from "./group_events.ts";
import type { GroupMember, GroupProtocol } from "./group_state.ts";

/**
 * JoinGroup, as Kafka's classic coordinator rules it: a new member is added (in version 4 and later
 * first given its id with MEMBER_ID_REQUIRED) and a rebalance is prepared; a known member rejoining
 * waits for the rebalance, or, when nothing changed, is answered the current generation at once.
 */
export function join(draft: GroupDraft, e: JoinEvent): void {
  const { settings } = draft;
  if (
    e.sessionTimeoutMs < settings.sessionTimeoutMinMs || e.sessionTimeoutMs > settings.sessionTimeoutMaxMs
  ) {
    return draft.refuseJoin(e.requestId, "invalid_session_timeout", e.memberId);
  }
  if (draft.phase === "dead") return draft.refuseJoin(e.requestId, "coordinator_not_available", e.memberId);
  if (e.memberId === "") return joinNew(draft, e);
  if (draft.pendingMembers.has(e.memberId)) {
    if (!supports(draft, e.protocolType, e.protocols)) {
      return draft.refuseJoin(e.requestId, "inconsistent_group_protocol", e.memberId);
    }
    draft.pendingMembers.delete(e.memberId);
    return addMember(draft, e, e.memberId);
  }
  const member = draft.members.get(e.memberId);
  if (member === undefined) return draft.refuseJoin(e.requestId, "unknown_member_id", e.memberId);
  if (e.groupInstanceId !== null && draft.staticMembers.get(e.groupInstanceId) !== e.memberId) {
    return draft.refuseJoin(e.requestId, "fenced_instance_id", e.memberId);
  }
  if (!supports(draft, e.protocolType, e.protocols, e.memberId)) {
    return draft.refuseJoin(e.requestId, "inconsistent_group_protocol", e.memberId);
  }
  rejoin(draft, member, e);
}

function joinNew(draft: GroupDraft, e: JoinEvent): void {
  if (!supports(draft, e.protocolType, e.protocols)) {
    return draft.refuseJoin(e.requestId, "inconsistent_group_protocol");
  }
  if (e.groupInstanceId !== null && draft.staticMembers.has(e.groupInstanceId)) {
    return replaceStatic(draft, e, draft.staticMembers.get(e.groupInstanceId)!);
  }
  if (draft.members.size + draft.pendingMembers.size >= draft.settings.membersMax) {
    return draft.refuseJoin(e.requestId, "group_max_size_reached");
  }
  if (e.requireKnownMemberId && e.groupInstanceId === null) {
    draft.pendingMembers.set(e.generatedMemberId, draft.nowMs + e.sessionTimeoutMs);
    return draft.refuseJoin(e.requestId, "member_id_required", e.generatedMemberId);
  }
  addMember(draft, e, e.generatedMemberId);
}

/**
 * A static member joining again with a new process (its `group.instance.id` held by an older member
 * id): the old id is fenced and the new one takes its place and its assignment. A stable group
 * whose member's protocols did not change needs no rebalance for it.
 */
function replaceStatic(draft: GroupDraft, e: JoinEvent, oldMemberId: string): void {
  const old = draft.members.get(oldMemberId)!;
  const unchanged = sameProtocols(old.protocols, e.protocols);
  const wasLeader = draft.leaderId === oldMemberId;
  draft.remove(oldMemberId);
  const member = newMember(draft, e, e.generatedMemberId, old.assignment);
  draft.members.set(member.memberId, member);
  draft.staticMembers.set(e.groupInstanceId!, member.memberId);
  if (wasLeader) draft.leaderId = member.memberId;
  if (draft.phase === "stable" && unchanged) {
    draft.update(member.memberId, { joinRequest: null });
    draft.answer(e.requestId, generationAnswer(draft, member.memberId));
    return draft.persist();
  }
  if (draft.phase === "preparing_rebalance") return maybeCompleteJoin(draft);
  prepareRebalance(draft);
}

function addMember(draft: GroupDraft, e: JoinEvent, memberId: string): void {
  const member = newMember(draft, e, memberId, new Uint8Array(0));
  if (draft.members.size === 0) draft.protocolType = e.protocolType;
  draft.members.set(memberId, member);
  if (e.groupInstanceId !== null) draft.staticMembers.set(e.groupInstanceId, memberId);
  if (draft.phase === "preparing_rebalance") {
    if (draft.initialDelayLimitMs !== null) {
      // The first rebalance from empty waits one more delay for each member joining within it.
      draft.rebalanceDeadlineMs = Math.min(
        draft.nowMs + draft.settings.initialRebalanceDelayMs,
        draft.initialDelayLimitMs,
      );
    }
    return maybeCompleteJoin(draft);
  }
  prepareRebalance(draft);
}

function newMember(draft: GroupDraft, e: JoinEvent, memberId: string, assignment: Uint8Array): GroupMember {
  return {
    memberId,
    groupInstanceId: e.groupInstanceId,
    clientId: e.clientId,
    clientHost: e.clientHost,
    sessionTimeoutMs: e.sessionTimeoutMs,
    rebalanceTimeoutMs: e.rebalanceTimeoutMs,
    protocols: e.protocols,
    assignment,
    joinRequest: e.requestId,
    syncRequest: null,
    sessionDeadlineMs: draft.nowMs + e.sessionTimeoutMs,
  };
}

function rejoin(draft: GroupDraft, member: GroupMember, e: JoinEvent): void {
  const unchanged = sameProtocols(member.protocols, e.protocols);
  const change = {
    protocols: e.protocols,
    sessionTimeoutMs: e.sessionTimeoutMs,
    rebalanceTimeoutMs: e.rebalanceTimeoutMs,
    sessionDeadlineMs: draft.nowMs + e.sessionTimeoutMs,
  };
  if (draft.phase === "preparing_rebalance") {
    // A second join from the same member replaces its first, which is told to join again.
    if (member.joinRequest !== null) {
      draft.refuseJoin(member.joinRequest, "rebalance_in_progress", member.memberId);
    }
    draft.update(member.memberId, { ...change, joinRequest: e.requestId });
    return maybeCompleteJoin(draft);
  }
  const answerNow = unchanged &&
    (draft.phase === "completing_rebalance" || draft.leaderId !== member.memberId);
  if (answerNow) {
    draft.update(member.memberId, change);
    return draft.answer(e.requestId, generationAnswer(draft, member.memberId));
  }
  draft.update(member.memberId, { ...change, joinRequest: e.requestId });
  prepareRebalance(draft);
}

/**
 * Starts a rebalance: syncs waiting are told REBALANCE_IN_PROGRESS, and the join phase lasts until
 * every member has joined again or the longest rebalance timeout has passed. From empty, the first
 * rebalance waits `group_initial_rebalance_delay` for more members instead.
 */
export function prepareRebalance(draft: GroupDraft): void {
  for (const member of draft.members.values()) {
    if (member.syncRequest !== null) {
      draft.answer(member.syncRequest, syncRefusal("rebalance_in_progress"));
      draft.update(member.memberId, { syncRequest: null });
    }
  }
  const fromEmpty = draft.phase === "empty";
  draft.enter("preparing_rebalance");
  const rebalanceTimeoutMs = Math.max(0, ...[...draft.members.values()].map((m) => m.rebalanceTimeoutMs));
  if (fromEmpty && draft.settings.initialRebalanceDelayMs > 0) {
    draft.initialDelayLimitMs = draft.nowMs + rebalanceTimeoutMs;
    draft.rebalanceDeadlineMs = Math.min(
      draft.nowMs + draft.settings.initialRebalanceDelayMs,
      draft.initialDelayLimitMs,
    );
  } else {
    draft.initialDelayLimitMs = null;
    draft.rebalanceDeadlineMs = draft.nowMs + rebalanceTimeoutMs;
  }
  maybeCompleteJoin(draft);
}

/**
 * Completes the join phase once every member has joined again and no member id given out is
 * awaited (during the initial delay, only at its end), or when its deadline has passed.
 */
export function maybeCompleteJoin(draft: GroupDraft): void {
  assert(draft.phase === "preparing_rebalance", "a join phase completes only while preparing");
  const due = draft.nowMs >= draft.rebalanceDeadlineMs!;
  const allJoined = [...draft.members.values()].every((m) => m.joinRequest !== null) &&
    draft.pendingMembers.size === 0;
  const waitingOnDelay = draft.initialDelayLimitMs !== null && draft.members.size > 0;
  if (due || (allJoined && !waitingOnDelay) || draft.members.size === 0) completeJoin(draft);
}

/**
 * The join phase's end: members that did not join again are dropped; with none left the group is
 * empty, otherwise a new generation starts with the protocol the members choose, and every join
 * is answered (the leader's with each member's metadata).
 */
function completeJoin(draft: GroupDraft): void {
  for (const member of [...draft.members.values()]) {
    if (member.joinRequest === null) draft.remove(member.memberId);
  }
  draft.generation += 1;
  draft.initialDelayLimitMs = null;
  if (draft.members.size === 0) {
    draft.enter("empty");
    Object.assign(draft, { protocolType: null, protocol: null, leaderId: null, rebalanceDeadlineMs: null });
    return draft.persist();
  }
  const members = [...draft.members.values()];
  draft.protocol = chooseProtocol(members);
  draft.leaderId = draft.leaderId ?? members[0]!.memberId;
  draft.enter("completing_rebalance");
  draft.rebalanceDeadlineMs = draft.nowMs + Math.max(...members.map((m) => m.rebalanceTimeoutMs));
  for (const member of members) {
    const requestId = member.joinRequest!;
    draft.update(member.memberId, { joinRequest: null, sessionDeadlineMs: draft.sessionFrom(member) });
    draft.answer(requestId, generationAnswer(draft, member.memberId));
  }
}

/** The current generation as JoinGroup answers `memberId`: the member list to the leader only. */
function generationAnswer(draft: GroupDraft, memberId: string): JoinAnswer {
  const isLeader = draft.leaderId === memberId;
  const members = isLeader
    ? [...draft.members.values()].map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      metadata: m.protocols.find((p) => p.name === draft.protocol)!.metadata,
    }))
    : [];
  return {
    kind: "join",
    error: null,
    generation: draft.generation,
    protocolType: draft.protocolType,
    protocol: draft.protocol,
    leaderId: draft.leaderId!,
    memberId,
    members,
  };
}

/**
 * Whether a member with these protocols fits the group: any protocol type and protocol for an
 * empty group, otherwise the group's type and a protocol every other member supports too.
 */
function supports(
  draft: GroupDraft,
  protocolType: string,
  protocols: readonly GroupProtocol[],
  self = "",
): boolean {
  if (protocolType === "" || protocols.length === 0) return false;
  const others = [...draft.members.values()].filter((m) => m.memberId !== self);
  if (others.length === 0) return true;
  if (protocolType !== draft.protocolType) return false;
  return protocols.some((p) => others.every((m) => m.protocols.some((q) => q.name === p.name)));
}

/** Each member votes for its most preferred protocol that all support; the most votes win. */
function chooseProtocol(members: readonly GroupMember[]): string {
  const candidates = members[0]!.protocols.map((p) => p.name).filter((name) =>
    members.every((m) => m.protocols.some((p) => p.name === name))
  );
  assert(candidates.length > 0, "the members of a generation share a protocol");
  const votes = new Map(candidates.map((name) => [name, 0]));
  for (const member of members) {
    const vote = member.protocols.find((p) => votes.has(p.name))!.name;
    votes.set(vote, votes.get(vote)! + 1);
  }
  return candidates.reduce((best, name) => (votes.get(name)! > votes.get(best)! ? name : best));
}

function sameProtocols(a: readonly GroupProtocol[], b: readonly GroupProtocol[]): boolean {
  return a.length === b.length &&
    a.every((p, i) =>
      p.name === b[i]!.name && p.metadata.length === b[i]!.metadata.length &&
      p.metadata.every((byte, j) => byte === b[i]!.metadata[j])
    );
}
