import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * LeaveGroup (key 13), versions 0 to 3: members leave a group, which rebalances without them.
 * Versions 0 to 2 name one member by its id; v3 names several, each by member id or by static
 * `group.instance.id`, and is answered per member. v1 adds the throttle time to the response.
 */

export const leaveGroupVersionMin = 0;
export const leaveGroupVersionMax = 3;

export interface LeaveGroupMemberRequest {
  /** The leaving member's id; "" for a static member named by its instance id. */
  memberId: string;
  /** The static member's `group.instance.id`, or null (always null before v3). */
  groupInstanceId: string | null;
}

export interface LeaveGroupRequest {
  /** The group to leave. */
  groupId: string;
  /** The members leaving: before v3 the one member the request names. */
  members: LeaveGroupMemberRequest[];
}

export interface LeaveGroupMemberResponse {
  /** The member's id, as asked. */
  memberId: string;
  /** Its `group.instance.id`, as asked, or null. */
  groupInstanceId: string | null;
  /** The error code for this member, or 0. */
  errorCode: number;
}

export interface LeaveGroupResponse {
  /** The error code for the whole request, or 0. */
  errorCode: number;
  /** The answer per member; sent from v3 only. */
  members: LeaveGroupMemberResponse[];
}

/** Reads the body of a LeaveGroup request of a version served. */
export function readLeaveGroupRequest(version: number, body: KafkaReader): LeaveGroupRequest {
  if (version < leaveGroupVersionMin || version > leaveGroupVersionMax) {
    throw new KafkaDecodeError(`LeaveGroup v${version} is not read here`);
  }
  const groupId = body.string();
  if (version < 3) return { groupId, members: [{ memberId: body.string(), groupInstanceId: null }] };
  // Each member takes at least its two int16 lengths.
  const members = body.array((m) => ({ memberId: m.string(), groupInstanceId: m.nullableString() }), 4);
  return { groupId, members };
}

/** The whole response (header and body) to a LeaveGroup request with `header`. */
export function encodeLeaveGroupResponse(header: RequestHeader, response: LeaveGroupResponse): Uint8Array {
  const version = header.apiVersion;
  if (version < leaveGroupVersionMin || version > leaveGroupVersionMax) {
    throw new RangeError(`Cannot encode a LeaveGroup v${version} response: it is not served`);
  }
  const members = version >= 3 ? response.members : [];
  const bytesMax = 32 +
    members.reduce((n, m) => n + 6 + 3 * (m.memberId.length + (m.groupInstanceId?.length ?? 0)), 0);
  const writer = new KafkaWriter(bytesMax, Math.min(bytesMax, 1024));
  writeResponseHeader(writer, { ...header, apiKey: apiKey.leaveGroup });
  if (version >= 1) writer.int32(0);
  writer.int16(response.errorCode);
  if (version >= 3) {
    writer.array(members, (w, m) => {
      w.nullableString(m.memberId).nullableString(m.groupInstanceId).int16(m.errorCode);
    });
  }
  return writer.bytes();
}
