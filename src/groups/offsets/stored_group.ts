import { emptyGroup, type GroupMember, type GroupState } from "../core/group_state.ts";
import type { StoredGroup } from "./offsets_records.ts";

/**
 * What a group's metadata record keeps of its state: the generation, its protocol and leader, and
 * each member with its subscription (its metadata for the chosen protocol) and assignment. Requests
 * waiting, deadlines and member ids given out are not kept: a new coordinator starts without them.
 */
export function storedGroupOf(state: GroupState): StoredGroup {
  return {
    protocolType: state.protocolType,
    generation: state.generation,
    protocol: state.protocol,
    leaderId: state.leaderId,
    members: [...state.members.values()].map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      sessionTimeoutMs: m.sessionTimeoutMs,
      rebalanceTimeoutMs: m.rebalanceTimeoutMs,
      subscription: m.protocols.find((p) => p.name === state.protocol)?.metadata ?? new Uint8Array(0),
      assignment: m.assignment,
    })),
  };
}

/**
 * A group as a coordinator that loads its record takes it up: a group with members is stable in its
 * generation, each member's session starting now (as after a heartbeat), so that members that are
 * gone lapse and those that are alive carry on without a rebalance; one without is empty.
 */
export function groupFromStored(groupId: string, stored: StoredGroup, nowMs: number): GroupState {
  const base = emptyGroup(groupId, nowMs);
  const protocol = stored.protocol;
  if (stored.members.length === 0 || protocol === null) {
    return { ...base, generation: stored.generation };
  }
  const members = new Map<string, GroupMember>();
  const staticMembers = new Map<string, string>();
  for (const m of stored.members) {
    members.set(m.memberId, {
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      sessionTimeoutMs: m.sessionTimeoutMs,
      rebalanceTimeoutMs: m.rebalanceTimeoutMs,
      protocols: [{ name: protocol, metadata: m.subscription }],
      assignment: m.assignment,
      joinRequest: null,
      syncRequest: null,
      sessionDeadlineMs: nowMs + m.sessionTimeoutMs,
    });
    if (m.groupInstanceId !== null) staticMembers.set(m.groupInstanceId, m.memberId);
  }
  const leaderId = stored.leaderId !== null && members.has(stored.leaderId)
    ? stored.leaderId
    : stored.members[0]!.memberId;
  return {
    ...base,
    phase: "stable",
    generation: stored.generation,
    protocolType: stored.protocolType,
    protocol,
    leaderId,
    members,
    staticMembers,
  };
}
