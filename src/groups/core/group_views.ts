import { internalAppendRefusal } from "../../broker/internal_topic.ts";
import type { GroupError } from "./group_events.ts";
import type { GroupCoordinator } from "../group_coordinator.ts";
import type { GroupPhase, GroupState } from "./group_state.ts";
import type { OffsetsRecord } from "../offsets/offsets_records.ts";

/** A group's phase as Kafka names its state in ListGroups and DescribeGroups. */
export const kafkaGroupState: Readonly<Record<GroupPhase, string>> = {
  empty: "Empty",
  preparing_rebalance: "PreparingRebalance",
  completing_rebalance: "CompletingRebalance",
  stable: "Stable",
  dead: "Dead",
};

export interface ListedGroup {
  groupId: string;
  /** "consumer" for Kafka's consumers; "" for a group without members (offsets only). */
  protocolType: string;
  state: string;
}

/** ListGroups: every group of the partitions this node coordinates, with or without members. */
export function listGroups(coordinator: GroupCoordinator): ListedGroup[] {
  const listed: ListedGroup[] = [];
  for (const p of coordinator.loadedPartitions()) {
    for (const groupId of p.groupIds()) {
      const state = p.groups.get(groupId);
      listed.push({
        groupId,
        protocolType: state?.protocolType ?? "",
        state: kafkaGroupState[state?.phase ?? "empty"],
      });
    }
  }
  return listed.sort((a, b) => (a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0));
}

export interface DescribedMember {
  memberId: string;
  groupInstanceId: string | null;
  clientId: string;
  clientHost: string;
  /** Its metadata for the group's protocol (a consumer's subscription); empty unless the group is stable. */
  metadata: Uint8Array;
  /** What the leader assigned it; empty unless the group is stable. */
  assignment: Uint8Array;
}

export interface DescribedGroup {
  error: GroupError | null;
  groupId: string;
  state: string;
  protocolType: string;
  /** The generation's protocol (the assignor's name), or "". */
  protocol: string;
  generation: number;
  members: DescribedMember[];
}

/**
 * DescribeGroups: each group's state, protocol and members (their subscriptions and assignments
 * while the group is stable, as Kafka gives them). A group nothing is known of is "Dead", without
 * an error, as Kafka answers it.
 */
export function describeGroups(coordinator: GroupCoordinator, groupIds: readonly string[]): DescribedGroup[] {
  return groupIds.map((groupId) => {
    const route = coordinator.route(groupId);
    if (route.error !== null) return deadGroup(groupId, route.error);
    const state = route.partition.groups.get(groupId);
    if (state !== undefined) return describedGroup(state);
    return route.partition.offsets.has(groupId)
      ? { ...deadGroup(groupId, null), state: kafkaGroupState.empty }
      : deadGroup(groupId, null);
  });
}

function deadGroup(groupId: string, error: GroupError | null): DescribedGroup {
  return { error, groupId, state: "Dead", protocolType: "", protocol: "", generation: -1, members: [] };
}

function describedGroup(state: GroupState): DescribedGroup {
  const stable = state.phase === "stable";
  return {
    error: null,
    groupId: state.groupId,
    state: kafkaGroupState[state.phase],
    protocolType: state.protocolType ?? "",
    protocol: stable ? state.protocol ?? "" : "",
    generation: state.generation,
    members: [...state.members.values()].map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      metadata: stable
        ? m.protocols.find((p) => p.name === state.protocol)?.metadata ?? new Uint8Array(0)
        : new Uint8Array(0),
      assignment: stable ? m.assignment : new Uint8Array(0),
    })),
  };
}

/**
 * DeleteGroups: each group without members is deleted with its committed offsets (their
 * tombstones appended first); one with members is NON_EMPTY_GROUP, one not known GROUP_ID_NOT_FOUND.
 */
export async function deleteGroups(
  coordinator: GroupCoordinator,
  groupIds: readonly string[],
): Promise<{ groupId: string; error: GroupError | null }[]> {
  return await Promise.all(
    groupIds.map(async (groupId) => ({ groupId, error: await deleteGroup(coordinator, groupId) })),
  );
}

async function deleteGroup(coordinator: GroupCoordinator, groupId: string): Promise<GroupError | null> {
  const route = coordinator.route(groupId);
  if (route.error !== null) return route.error;
  const p = route.partition;
  const state = p.groups.get(groupId);
  if (state === undefined && !p.offsets.has(groupId)) return "group_id_not_found";
  if (state !== undefined && (state.members.size > 0 || state.pendingMembers.size > 0)) {
    return "non_empty_group";
  }
  const tombstones: OffsetsRecord[] = [
    { kind: "group", groupId, value: null },
    ...p.offsets.entriesOf(groupId).map((e) => ({
      kind: "offset" as const,
      groupId,
      topic: e.topic,
      partition: e.partition,
      value: null,
    })),
  ];
  try {
    await p.enqueue(async () => {
      const appended = await coordinator.deps.log.append(p.index, tombstones);
      // Members may have joined while the tombstones were written: the group stays, its offsets go.
      const now = p.groups.get(groupId);
      if (now !== undefined && now.members.size === 0 && now.pendingMembers.size === 0) {
        p.groups.delete(groupId);
      }
      p.offsets.removeGroup(groupId);
      coordinator.appended(p, appended.bytes);
    });
    return null;
  } catch (error) {
    return internalAppendRefusal(error);
  }
}
