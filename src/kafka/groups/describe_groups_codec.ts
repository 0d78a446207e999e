import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * DescribeGroups (key 15), versions 0 to 4: each group's state, protocol and members with their
 * metadata and assignment. v1 adds the throttle time to the response; v3 whether authorized
 * operations are wanted (answered as not provided); v4 each member's static `group.instance.id`.
 */

export const describeGroupsVersionMin = 0;
export const describeGroupsVersionMax = 4;

/** Kafka's "not provided" for authorized operations (INT32_MIN): the server does not report them. */
const authorizedOperationsNotProvided = -2147483648;

export interface DescribeGroupsRequest {
  /** The ids of the groups to describe. */
  groups: string[];
  /** Whether authorized operations are wanted (from v3; false before). */
  includeAuthorizedOperations: boolean;
}

export interface DescribedGroupMember {
  /** The member's id. */
  memberId: string;
  /** Its `group.instance.id`, or null; sent from v4. */
  groupInstanceId: string | null;
  /** The client id of its latest JoinGroup. */
  clientId: string;
  /** The host it connected from. */
  clientHost: string;
  /** Its metadata for the group's protocol; empty unless the group is Stable. */
  memberMetadata: Uint8Array;
  /** Its assignment; empty unless the group is Stable. */
  memberAssignment: Uint8Array;
}

export interface DescribedGroup {
  /** The error code for this group, or 0. */
  errorCode: number;
  /** The group's id. */
  groupId: string;
  /** Its state ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"), or "". */
  groupState: string;
  /** Its protocol type, or "". */
  protocolType: string;
  /** The protocol chosen (when Stable), or "". */
  protocolData: string;
  /** Its members; none when Dead. */
  members: DescribedGroupMember[];
}

export interface DescribeGroupsResponse {
  /** The answer per group, in the order asked. */
  groups: DescribedGroup[];
}

/** Reads the body of a DescribeGroups request of a version served. */
export function readDescribeGroupsRequest(version: number, body: KafkaReader): DescribeGroupsRequest {
  if (version < describeGroupsVersionMin || version > describeGroupsVersionMax) {
    throw new KafkaDecodeError(`DescribeGroups v${version} is not read here`);
  }
  // Each id takes at least its int16 length.
  const groups = body.array((r) => r.string(), 2);
  const includeAuthorizedOperations = version >= 3 ? body.boolean() : false;
  return { groups, includeAuthorizedOperations };
}

/** The whole response (header and body) to a DescribeGroups request with `header`. */
export function encodeDescribeGroupsResponse(
  header: RequestHeader,
  response: DescribeGroupsResponse,
): Uint8Array {
  const version = header.apiVersion;
  if (version < describeGroupsVersionMin || version > describeGroupsVersionMax) {
    throw new RangeError(`Cannot encode a DescribeGroups v${version} response: it is not served`);
  }
  const writer = new KafkaWriter(responseBytesMax(response), 1024);
  writeResponseHeader(writer, { ...header, apiKey: apiKey.describeGroups });
  if (version >= 1) writer.int32(0);
  writer.array(response.groups, (w, g) => {
    w.int16(g.errorCode).nullableString(g.groupId).nullableString(g.groupState);
    w.nullableString(g.protocolType).nullableString(g.protocolData);
    w.array(g.members, (mw, m) => {
      mw.nullableString(m.memberId);
      if (version >= 4) mw.nullableString(m.groupInstanceId);
      mw.nullableString(m.clientId).nullableString(m.clientHost);
      mw.nullableBytes(m.memberMetadata).nullableBytes(m.memberAssignment);
    });
    if (version >= 3) w.int32(authorizedOperationsNotProvided);
  });
  return writer.bytes();
}

/** A bound on the response's size: every string at 3 bytes a UTF-16 unit, and every length field. */
function responseBytesMax(response: DescribeGroupsResponse): number {
  const text = (...texts: (string | null)[]) => texts.reduce((n, s) => n + 3 * (s?.length ?? 0), 0);
  return 16 + response.groups.reduce(
    (n, g) =>
      g.members.reduce(
        (k, m) =>
          k + 16 + text(m.memberId, m.groupInstanceId, m.clientId, m.clientHost) +
          m.memberMetadata.length + m.memberAssignment.length,
        n + 20 + text(g.groupId, g.groupState, g.protocolType, g.protocolData),
      ),
    0,
  );
}
