import type { GroupError } from "../../groups/core/group_events.ts";
import { commitOffsets, fetchOffsets } from "../../groups/core/group_offsets.ts";
import { deleteGroups, describeGroups, listGroups } from "../../groups/core/group_views.ts";
import {
  deleteGroupsVersionMax,
  deleteGroupsVersionMin,
  encodeDeleteGroupsResponse,
  readDeleteGroupsRequest,
} from "./delete_groups_codec.ts";
import {
  describeGroupsVersionMax,
  describeGroupsVersionMin,
  encodeDescribeGroupsResponse,
  readDescribeGroupsRequest,
} from "./describe_groups_codec.ts";
import { groupErrorCode } from "../kafka_errors.ts";
import type { KafkaApi } from "../kafka_api.ts";
import {
  encodeListGroupsResponse,
  listGroupsVersionMax,
  listGroupsVersionMin,
  readListGroupsRequest,
} from "./list_groups_codec.ts";
import {
  encodeOffsetCommitResponse,
  offsetCommitVersionMax,
  offsetCommitVersionMin,
  readOffsetCommitRequest,
} from "./offset_commit_codec.ts";
import {
  encodeOffsetFetchResponse,
  type OffsetFetchTopicResponse,
  offsetFetchVersionMax,
  offsetFetchVersionMin,
  readOffsetFetchRequest,
} from "./offset_fetch_codec.ts";
import { apiKey } from "../wire/frame_codec.ts";

/**
 * The group APIs around membership, answered by the group coordinator: OffsetCommit 2 to 7,
 * OffsetFetch 1 to 5, ListGroups 0 to 3, DescribeGroups 0 to 4, DeleteGroups 0 to 1. Without a
 * coordinator every group is COORDINATOR_NOT_AVAILABLE.
 */

const unavailable: GroupError = "coordinator_not_available";

export const offsetCommitApi: KafkaApi = {
  apiKey: apiKey.offsetCommit,
  name: "offset_commit",
  minVersion: offsetCommitVersionMin,
  maxVersion: offsetCommitVersionMax,
  async handle(header, body, serving) {
    const request = readOffsetCommitRequest(header.apiVersion, body);
    const offsets = request.topics.flatMap((t) =>
      t.partitions.map((p) => ({
        topic: t.name,
        partition: p.partitionIndex,
        offset: p.committedOffset,
        leaderEpoch: p.committedLeaderEpoch,
        metadata: p.committedMetadata,
      }))
    );
    const result = serving.groups === null
      ? offsets.map((o) => ({ ...o, error: unavailable }))
      : await commitOffsets(serving.groups, {
        groupId: request.groupId,
        memberId: request.memberId,
        groupInstanceId: request.groupInstanceId,
        generation: request.generationId,
        offsets,
      });
    let at = 0;
    const topics = request.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        errorCode: groupErrorCode(result[at++]!.error),
      })),
    }));
    const errorCount = result.filter((r) => r.error !== null).length;
    return { pieces: [encodeOffsetCommitResponse(header, { topics })], errorCount };
  },
};

export const offsetFetchApi: KafkaApi = {
  apiKey: apiKey.offsetFetch,
  name: "offset_fetch",
  minVersion: offsetFetchVersionMin,
  maxVersion: offsetFetchVersionMax,
  handle(header, body, serving) {
    const request = readOffsetFetchRequest(header.apiVersion, body);
    const asked = request.topics?.map((t) => ({ topic: t.name, partitions: t.partitionIndexes })) ?? null;
    const fetched = serving.groups === null
      ? { error: unavailable, topics: [] }
      : fetchOffsets(serving.groups, request.groupId, asked, request.requireStable);
    const errorCode = groupErrorCode(fetched.error);
    // v1 has no error for the whole answer: a refusal goes to every partition asked for.
    const topics: OffsetFetchTopicResponse[] = fetched.error !== null
      ? (asked ?? []).map(({ topic, partitions }) => ({
        name: topic,
        partitions: partitions.map((partitionIndex) => ({
          partitionIndex,
          committedOffset: -1,
          committedLeaderEpoch: -1,
          metadata: "",
          errorCode,
        })),
      }))
      : fetched.topics.map(({ topic, partitions }) => ({
        name: topic,
        partitions: partitions.map((p) => ({
          partitionIndex: p.partition,
          committedOffset: p.offset,
          committedLeaderEpoch: p.leaderEpoch,
          metadata: p.metadata,
          errorCode: groupErrorCode(p.error),
        })),
      }));
    const piece = encodeOffsetFetchResponse(header, { topics, errorCode });
    return Promise.resolve({ pieces: [piece], errorCount: fetched.error === null ? 0 : 1 });
  },
};

export const listGroupsApi: KafkaApi = {
  apiKey: apiKey.listGroups,
  name: "list_groups",
  minVersion: listGroupsVersionMin,
  maxVersion: listGroupsVersionMax,
  handle(header, body, serving) {
    readListGroupsRequest(header.apiVersion, body);
    const groups = serving.groups === null ? [] : listGroups(serving.groups);
    const piece = encodeListGroupsResponse(header, {
      errorCode: serving.groups === null ? groupErrorCode(unavailable) : 0,
      groups: groups.map((g) => ({ groupId: g.groupId, protocolType: g.protocolType })),
    });
    return Promise.resolve({ pieces: [piece], errorCount: serving.groups === null ? 1 : 0 });
  },
};

export const describeGroupsApi: KafkaApi = {
  apiKey: apiKey.describeGroups,
  name: "describe_groups",
  minVersion: describeGroupsVersionMin,
  maxVersion: describeGroupsVersionMax,
  handle(header, body, serving) {
    const request = readDescribeGroupsRequest(header.apiVersion, body);
    const described = serving.groups === null
      ? request.groups.map((groupId) => ({
        error: unavailable,
        groupId,
        state: "Dead",
        protocolType: "",
        protocol: "",
        members: [],
      }))
      : describeGroups(serving.groups, request.groups);
    const groups = described.map((g) => ({
      errorCode: groupErrorCode(g.error),
      groupId: g.groupId,
      groupState: g.state,
      protocolType: g.protocolType,
      protocolData: g.protocol,
      members: g.members.map((m) => ({
        memberId: m.memberId,
        groupInstanceId: m.groupInstanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        memberMetadata: m.metadata,
        memberAssignment: m.assignment,
      })),
    }));
    const errorCount = groups.filter((g) => g.errorCode !== 0).length;
    return Promise.resolve({ pieces: [encodeDescribeGroupsResponse(header, { groups })], errorCount });
  },
};

export const deleteGroupsApi: KafkaApi = {
  apiKey: apiKey.deleteGroups,
  name: "delete_groups",
  minVersion: deleteGroupsVersionMin,
  maxVersion: deleteGroupsVersionMax,
  async handle(header, body, serving) {
    const request = readDeleteGroupsRequest(header.apiVersion, body);
    const deleted = serving.groups === null
      ? request.groupsNames.map((groupId) => ({ groupId, error: unavailable }))
      : await deleteGroups(serving.groups, request.groupsNames);
    const results = deleted.map((d) => ({ groupId: d.groupId, errorCode: groupErrorCode(d.error) }));
    const errorCount = results.filter((r) => r.errorCode !== 0).length;
    return { pieces: [encodeDeleteGroupsResponse(header, { results })], errorCount };
  },
};
