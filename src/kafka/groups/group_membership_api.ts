import type { GroupError } from "../../groups/core/group_events.ts";
import type { GroupCoordinator } from "../../groups/group_coordinator.ts";
import { groupErrorCode } from "../kafka_errors.ts";
import {
  encodeHeartbeatResponse,
  heartbeatVersionMax,
  heartbeatVersionMin,
  readHeartbeatRequest,
} from "./heartbeat_codec.ts";
import {
  encodeJoinGroupResponse,
  joinGroupVersionMax,
  joinGroupVersionMin,
  readJoinGroupRequest,
} from "./join_group_codec.ts";
import type { KafkaAnswer, KafkaApi, KafkaServing } from "../kafka_api.ts";
import {
  encodeLeaveGroupResponse,
  leaveGroupVersionMax,
  leaveGroupVersionMin,
  readLeaveGroupRequest,
} from "./leave_group_codec.ts";
import { apiKey } from "../wire/frame_codec.ts";
import {
  encodeSyncGroupResponse,
  readSyncGroupRequest,
  syncGroupVersionMax,
  syncGroupVersionMin,
} from "./sync_group_codec.ts";

/**
 * The group membership APIs of Kafka's classic protocol, answered by the group coordinator
 * (`GroupCoordinator`): JoinGroup 2 to 5, SyncGroup 0 to 3, Heartbeat 0 to 3, LeaveGroup 0 to 3. A
 * join or sync may wait for the rebalance it belongs to; everything else is answered at once.
 */

/** The coordinator, or the refusal every group request gets without one. */
function coordinatorOf(serving: KafkaServing): GroupCoordinator | GroupError {
  return serving.groups ?? "coordinator_not_available";
}

function answer(piece: Uint8Array, error: GroupError | null): KafkaAnswer {
  return { pieces: [piece], errorCount: error === null ? 0 : 1 };
}

/** Kafka gives a member's host as "/address", the client's address without its port. */
function clientHostOf(remoteAddress: string): string {
  const colon = remoteAddress.lastIndexOf(":");
  const host = colon > 0 ? remoteAddress.slice(0, colon) : remoteAddress;
  return `/${host.replace(/^\[|\]$/g, "")}`;
}

export const joinGroupApi: KafkaApi = {
  apiKey: apiKey.joinGroup,
  name: "join_group",
  minVersion: joinGroupVersionMin,
  maxVersion: joinGroupVersionMax,
  async handle(header, body, serving) {
    const request = readJoinGroupRequest(header.apiVersion, body);
    const groups = coordinatorOf(serving);
    const joined = typeof groups === "string"
      ? {
        error: groups,
        generation: -1,
        protocol: null,
        leaderId: "",
        memberId: request.memberId,
        members: [],
      }
      : await groups.join({
        groupId: request.groupId,
        memberId: request.memberId,
        groupInstanceId: request.groupInstanceId,
        clientId: header.clientId ?? "",
        clientHost: clientHostOf(serving.remoteAddress),
        sessionTimeoutMs: request.sessionTimeoutMs,
        rebalanceTimeoutMs: request.rebalanceTimeoutMs,
        protocolType: request.protocolType,
        protocols: request.protocols,
        requireKnownMemberId: header.apiVersion >= 4,
      });
    const piece = encodeJoinGroupResponse(header, {
      errorCode: groupErrorCode(joined.error),
      generationId: joined.generation,
      protocolName: joined.protocol ?? "",
      leader: joined.leaderId,
      memberId: joined.memberId,
      members: joined.members.map((m) => ({ ...m })),
    });
    return answer(piece, joined.error);
  },
};

export const syncGroupApi: KafkaApi = {
  apiKey: apiKey.syncGroup,
  name: "sync_group",
  minVersion: syncGroupVersionMin,
  maxVersion: syncGroupVersionMax,
  async handle(header, body, serving) {
    const request = readSyncGroupRequest(header.apiVersion, body);
    const groups = coordinatorOf(serving);
    const synced = typeof groups === "string"
      ? { error: groups, assignment: new Uint8Array(0) }
      : await groups.sync({
        groupId: request.groupId,
        memberId: request.memberId,
        groupInstanceId: request.groupInstanceId,
        generation: request.generationId,
        assignments: new Map(request.assignments.map((a) => [a.memberId, a.assignment])),
      });
    const piece = encodeSyncGroupResponse(header, {
      errorCode: groupErrorCode(synced.error),
      assignment: synced.assignment,
    });
    return answer(piece, synced.error);
  },
};

export const heartbeatApi: KafkaApi = {
  apiKey: apiKey.heartbeat,
  name: "heartbeat",
  minVersion: heartbeatVersionMin,
  maxVersion: heartbeatVersionMax,
  async handle(header, body, serving) {
    const request = readHeartbeatRequest(header.apiVersion, body);
    const groups = coordinatorOf(serving);
    const { error } = typeof groups === "string" ? { error: groups } : await groups.heartbeat({
      groupId: request.groupId,
      memberId: request.memberId,
      groupInstanceId: request.groupInstanceId,
      generation: request.generationId,
    });
    return answer(encodeHeartbeatResponse(header, { errorCode: groupErrorCode(error) }), error);
  },
};

export const leaveGroupApi: KafkaApi = {
  apiKey: apiKey.leaveGroup,
  name: "leave_group",
  minVersion: leaveGroupVersionMin,
  maxVersion: leaveGroupVersionMax,
  async handle(header, body, serving) {
    const request = readLeaveGroupRequest(header.apiVersion, body);
    const groups = coordinatorOf(serving);
    const left = typeof groups === "string"
      ? { error: groups, members: [] }
      : await groups.leave({ groupId: request.groupId, members: request.members });
    // Before v3 one member leaves, and its own refusal is the answer's.
    const error = header.apiVersion < 3 ? left.error ?? left.members[0]?.error ?? null : left.error;
    const piece = encodeLeaveGroupResponse(header, {
      errorCode: groupErrorCode(error),
      members: left.members.map((m) => ({
        memberId: m.memberId,
        groupInstanceId: m.groupInstanceId,
        errorCode: groupErrorCode(m.error),
      })),
    });
    return answer(piece, error);
  },
};
