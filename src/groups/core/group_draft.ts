import { assert } from "../../runtime/assert.ts";
import type { GroupAnswer, GroupEffect, GroupError, JoinAnswer } from "./group_events.ts";
import type { GroupMember, GroupPhase, GroupSettings, GroupState } from "./group_state.ts";

/**
 * One step's working copy of a group: its maps copied once (bounded by `group_members_max`), changed
 * in place by the step's rules, and frozen back into a `GroupState` with the effects it gathered.
 * The state a step was given is never changed.
 */
export class GroupDraft {
  readonly groupId: string;
  phase: GroupPhase;
  generation: number;
  protocolType: string | null;
  protocol: string | null;
  leaderId: string | null;
  readonly members: Map<string, GroupMember>;
  readonly pendingMembers: Map<string, number>;
  readonly staticMembers: Map<string, string>;
  rebalanceDeadlineMs: number | null;
  initialDelayLimitMs: number | null;
  phaseSinceMs: number;
  readonly effects: GroupEffect[] = [];
  readonly nowMs: number;
  readonly settings: GroupSettings;

  constructor(state: GroupState, nowMs: number, settings: GroupSettings) {
    this.groupId = state.groupId;
    this.phase = state.phase;
    this.generation = state.generation;
    this.protocolType = state.protocolType;
    this.protocol = state.protocol;
    this.leaderId = state.leaderId;
    this.members = new Map(state.members);
    this.pendingMembers = new Map(state.pendingMembers);
    this.staticMembers = new Map(state.staticMembers);
    this.rebalanceDeadlineMs = state.rebalanceDeadlineMs;
    this.initialDelayLimitMs = state.initialDelayLimitMs;
    this.phaseSinceMs = state.phaseSinceMs;
    this.nowMs = nowMs;
    this.settings = settings;
  }

  enter(phase: GroupPhase): void {
    if (this.phase !== phase) this.phaseSinceMs = this.nowMs;
    this.phase = phase;
  }

  answer(requestId: number, answer: GroupAnswer): void {
    this.effects.push({ kind: "answer", requestId, answer });
  }

  /** Answers a join with `error` and nothing else. */
  refuseJoin(requestId: number, error: GroupError, memberId = ""): void {
    this.answer(requestId, joinRefusal(error, memberId));
  }

  persist(): void {
    if (!this.effects.some((e) => e.kind === "persist")) this.effects.push({ kind: "persist" });
  }

  /** Replaces a member's record by a changed copy. */
  update(memberId: string, change: Partial<GroupMember>): GroupMember {
    const member = this.members.get(memberId);
    assert(member !== undefined, `member ${memberId} of group ${this.groupId} is held`);
    const next = { ...member, ...change };
    this.members.set(memberId, next);
    return next;
  }

  /** The deadline of a session that starts now. */
  sessionFrom(member: { sessionTimeoutMs: number }): number {
    return this.nowMs + member.sessionTimeoutMs;
  }

  /** Removes a member, answering what it had waiting with UNKNOWN_MEMBER_ID. */
  remove(memberId: string): void {
    const member = this.members.get(memberId);
    if (member === undefined) return;
    if (member.joinRequest !== null) this.refuseJoin(member.joinRequest, "unknown_member_id", memberId);
    if (member.syncRequest !== null) this.answer(member.syncRequest, syncRefusal("unknown_member_id"));
    this.members.delete(memberId);
    if (member.groupInstanceId !== null && this.staticMembers.get(member.groupInstanceId) === memberId) {
      this.staticMembers.delete(member.groupInstanceId);
    }
    if (this.leaderId === memberId) this.leaderId = null;
  }

  freeze(): GroupState {
    const state: GroupState = {
      groupId: this.groupId,
      phase: this.phase,
      generation: this.generation,
      protocolType: this.protocolType,
      protocol: this.protocol,
      leaderId: this.leaderId,
      members: this.members,
      pendingMembers: this.pendingMembers,
      staticMembers: this.staticMembers,
      rebalanceDeadlineMs: this.rebalanceDeadlineMs,
      initialDelayLimitMs: this.initialDelayLimitMs,
      phaseSinceMs: this.phaseSinceMs,
    };
    checkGroupInvariants(state, this.settings);
    return state;
  }
}

export function joinRefusal(error: GroupError, memberId = ""): JoinAnswer {
  return {
    kind: "join",
    error,
    generation: -1,
    protocolType: null,
    protocol: null,
    leaderId: "",
    memberId,
    members: [],
  };
}

export function syncRefusal(error: GroupError): GroupAnswer {
  return { kind: "sync", error, protocolType: null, protocol: null, assignment: new Uint8Array(0) };
}

/** What holds after every step; a break is a bug in the steps, and the process stops. */
export function checkGroupInvariants(state: GroupState, settings: GroupSettings): void {
  const { members, phase, groupId } = state;
  assert(
    members.size + state.pendingMembers.size <= settings.membersMax,
    `group ${groupId} holds ${members.size} members and ${state.pendingMembers.size} pending, past ${settings.membersMax}`,
  );
  assert(
    (phase === "empty" || phase === "dead") === (members.size === 0),
    `group ${groupId}: ${phase} with ${members.size} members`,
  );
  assert(state.leaderId === null || members.has(state.leaderId), `group ${groupId}: its leader is a member`);
  const settled = phase === "stable" || phase === "completing_rebalance";
  assert(!settled || state.leaderId !== null, `group ${groupId}: a leader while ${phase}`);
  assert(members.size > 0 || state.leaderId === null, `group ${groupId}: no leader without members`);
  assert(
    (phase === "preparing_rebalance" || phase === "completing_rebalance") ===
      (state.rebalanceDeadlineMs !== null),
    `group ${groupId}: a rebalance deadline exactly while rebalancing (${phase})`,
  );
  for (const member of members.values()) {
    assert(
      member.joinRequest === null || phase === "preparing_rebalance",
      `group ${groupId}: a join waits while ${phase}`,
    );
    assert(
      member.syncRequest === null || phase === "completing_rebalance",
      `group ${groupId}: a sync waits while ${phase}`,
    );
  }
  for (const [instanceId, memberId] of state.staticMembers) {
    assert(
      members.get(memberId)?.groupInstanceId === instanceId,
      `group ${groupId}: static ${instanceId} is held`,
    );
  }
}
