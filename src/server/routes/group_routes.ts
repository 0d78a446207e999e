import { pathIdOf } from "./path_ids.ts";
import { NotLeaderError, ResourceNotFoundError, UnavailableError } from "../../broker/broker_errors.ts";
import type { Catalog } from "../../broker/catalog/catalog.ts";
import type { DataPlane } from "../../broker/data_plane.ts";
import { decodeConsumerAssignment } from "../../groups/core/consumer_protocol.ts";
import type { GroupError } from "../../groups/core/group_events.ts";
import type { GroupCoordinator } from "../../groups/group_coordinator.ts";
import { commitOffsets, fetchOffsets, type OffsetToCommit } from "../../groups/core/group_offsets.ts";
import { deleteGroups, describeGroups, listGroups } from "../../groups/core/group_views.ts";
import { ApiError, badRequest, conflict, coordinatorRefusal, notFound } from "../api_errors.ts";

/** Longest group id the HTTP API takes (Kafka takes any string; this bounds a path segment). */
export const groupIdCharsMax = 255;
/** Partitions one offsets reset may name. */
export const resetOffsetsMax = 10_000;

/** What the group routes need: the coordinator (null without the Kafka listener) and the Kafka stream. */
export interface GroupRouteDeps {
  groups: GroupCoordinator | null;
  catalog: Catalog;
  dataPlane: DataPlane;
  /** `[kafka] stream`: the stream the groups' topics live in. */
  kafkaStream: string;
}

/** The group id of a path segment: URL-decoded, 1 to `groupIdCharsMax` characters. */
export function groupIdOf(segment: string | undefined): string {
  return pathIdOf(segment, "group id", "invalid_group_id", groupIdCharsMax);
}

export function coordinatorOf(deps: GroupRouteDeps): GroupCoordinator {
  if (deps.groups === null) {
    throw notFound("Cannot serve consumer groups: the Kafka listener is not enabled ([kafka] enabled)");
  }
  return deps.groups;
}

/** The HTTP answer to a group refusal, with the refusal's code. */
export function groupApiError(groupId: string, error: GroupError): ApiError {
  const message = `Cannot serve group ${groupId}: ${error.replaceAll("_", " ")}`;
  const refusal = coordinatorRefusal(error, message);
  if (refusal !== null) return refusal;
  switch (error) {
    case "group_id_not_found":
      return notFound(message);
    case "non_empty_group":
    case "unknown_member_id":
    case "illegal_generation":
    case "rebalance_in_progress":
      return conflict(
        "non_empty_group",
        `Cannot change group ${groupId}: it has members; stop its consumers first`,
      );
    case "invalid_group_id":
    case "unknown_topic_or_partition":
    case "offset_metadata_too_large":
      return badRequest(error, message);
    default:
      return new ApiError(500, error, message);
  }
}

/** GET /groups: the groups this node coordinates. */
export function groupsView(deps: GroupRouteDeps) {
  return {
    groups: listGroups(coordinatorOf(deps)).map((g) => ({
      group_id: g.groupId,
      protocol_type: g.protocolType,
      state: g.state,
    })),
  };
}

/** GET /groups/{group}: its state, members with their assignments, and offsets with their lag. */
export function groupView(deps: GroupRouteDeps, groupId: string) {
  const coordinator = coordinatorOf(deps);
  const described = describeGroups(coordinator, [groupId])[0]!;
  if (described.error !== null) throw groupApiError(groupId, described.error);
  const offsets = offsetsView(deps, groupId);
  if (described.state === "Dead") throw notFound(`Cannot describe group ${groupId}: it does not exist`);
  return {
    group_id: groupId,
    state: described.state,
    protocol_type: described.protocolType,
    protocol: described.protocol,
    generation: described.generation,
    members: described.members.map((m) => ({
      member_id: m.memberId,
      group_instance_id: m.groupInstanceId,
      client_id: m.clientId,
      client_host: m.clientHost,
      assignment: described.protocolType === "consumer" ? decodeConsumerAssignment(m.assignment) : null,
    })),
    offsets: offsets.offsets,
  };
}

/** GET /groups/{group}/offsets: each committed offset, with the partition's high watermark and the lag. */
export function offsetsView(deps: GroupRouteDeps, groupId: string) {
  const fetched = fetchOffsets(coordinatorOf(deps), groupId, null);
  if (fetched.error !== null) throw groupApiError(groupId, fetched.error);
  return {
    group_id: groupId,
    offsets: fetched.topics.flatMap(({ topic, partitions }) =>
      partitions.map((p) => {
        const end = highWatermarkOf(deps.dataPlane, deps.kafkaStream, topic, p.partition);
        return {
          topic,
          partition: p.partition,
          offset: p.offset,
          metadata: p.metadata,
          high_watermark: end,
          lag: end === null ? null : Math.max(0, end - p.offset),
        };
      })
    ),
  };
}

function highWatermarkOf(data: DataPlane, stream: string, topic: string, partition: number): number | null {
  try {
    return data.offsetRange(stream, topic, partition).next;
  } catch (error) {
    // A topic deleted since the commit, or a partition another node leads or cannot serve: no lag
    // to give here, which the answer shows as a null lag.
    if (error instanceof ResourceNotFoundError || error instanceof NotLeaderError) return null;
    if (error instanceof UnavailableError) return null;
    throw error;
  }
}

/**
 * PUT /groups/{group}/offsets: sets a group's committed offsets, as Kafka's tools reset them, while
 * the group has no members: `{"offsets": [{"topic", "partition", "offset"}]}`, or `{"topic", "to":
 * "earliest" | "latest"}` for every partition of a topic.
 */
export async function resetOffsets(deps: GroupRouteDeps, groupId: string, body: Record<string, unknown>) {
  const coordinator = coordinatorOf(deps);
  const offsets = offsetsToReset(deps, body);
  const result = await commitOffsets(coordinator, {
    groupId,
    memberId: "",
    groupInstanceId: null,
    generation: -1,
    offsets,
  });
  const refused = result.find((r) => r.error !== null);
  if (refused !== undefined) throw groupApiError(groupId, refused.error!);
  return offsetsView(deps, groupId);
}

function offsetsToReset(deps: GroupRouteDeps, body: Record<string, unknown>): OffsetToCommit[] {
  const entry = (topic: string, partition: number, offset: number): OffsetToCommit => ({
    topic,
    partition,
    offset,
    leaderEpoch: -1,
    metadata: null,
  });
  if (typeof body["topic"] === "string" && (body["to"] === "earliest" || body["to"] === "latest")) {
    const topic = body["topic"];
    const to = body["to"];
    let partitions: number;
    try {
      partitions = deps.catalog.topic(deps.kafkaStream, topic).slots.length;
    } catch (error) {
      throw notFound(`Cannot reset offsets: topic ${topic} does not exist`, { cause: error });
    }
    return Array.from({ length: partitions }, (_, p) => {
      const range = deps.dataPlane.offsetRange(deps.kafkaStream, topic, p);
      return entry(topic, p, to === "earliest" ? range.start : range.next);
    });
  }
  const list = body["offsets"];
  if (!Array.isArray(list) || list.length === 0 || list.length > resetOffsetsMax) {
    throw badRequest(
      "invalid_offsets",
      `Cannot reset offsets: give "offsets" (1 to ${resetOffsetsMax} of {topic, partition, offset}) or "topic" and "to" (earliest or latest)`,
    );
  }
  return list.map((item) => {
    const { topic, partition, offset } = (item ?? {}) as Record<string, unknown>;
    const natural = (n: unknown) => typeof n === "number" && Number.isSafeInteger(n) && n >= 0;
    if (typeof topic !== "string" || !natural(partition) || !natural(offset)) {
      throw badRequest(
        "invalid_offsets",
        "Cannot reset offsets: each needs a topic, a partition and an offset ≥ 0",
      );
    }
    return entry(topic, partition as number, offset as number);
  });
}

/** DELETE /groups/{group}: a group without members, with its committed offsets. */
export async function deleteGroup(deps: GroupRouteDeps, groupId: string): Promise<void> {
  const [deleted] = await deleteGroups(coordinatorOf(deps), [groupId]);
  if (deleted!.error !== null) throw groupApiError(groupId, deleted!.error);
}
