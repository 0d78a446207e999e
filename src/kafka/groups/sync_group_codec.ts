import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * SyncGroup (key 14), versions 0 to 3: after a join, the leader sends each member's assignment and
 * every member (the leader too) gets its own back. v1 adds the throttle time to the response; v3
 * adds the static `group.instance.id` to the request.
 */

export const syncGroupVersionMin = 0;
export const syncGroupVersionMax = 3;

export interface SyncGroupAssignment {
  /** The member assigned to. */
  memberId: string;
  /** Its assignment, as the protocol encodes it: a copy, kept past the request. */
  assignment: Uint8Array;
}

export interface SyncGroupRequest {
  /** The group. */
  groupId: string;
  /** The generation the member joined. */
  generationId: number;
  /** The member's id. */
  memberId: string;
  /** The static member's `group.instance.id`; null for a dynamic member, and before v3. */
  groupInstanceId: string | null;
  /** Every member's assignment from the leader; none from the others. */
  assignments: SyncGroupAssignment[];
}

export interface SyncGroupResponse {
  /** The error code, or 0. */
  errorCode: number;
  /** The member's assignment; empty with an error. */
  assignment: Uint8Array;
}

/** Reads the body of a SyncGroup request of a version served. */
export function readSyncGroupRequest(version: number, body: KafkaReader): SyncGroupRequest {
  if (version < syncGroupVersionMin || version > syncGroupVersionMax) {
    throw new KafkaDecodeError(`SyncGroup v${version} is not read here`);
  }
  const groupId = body.string();
  const generationId = body.int32();
  const memberId = body.string();
  const groupInstanceId = version >= 3 ? body.nullableString() : null;
  // Each assignment takes at least its member id's int16 length and its bytes' int32 length.
  const assignments = body.array((a) => {
    const member = a.string();
    const assignment = a.nullableBytes();
    if (assignment === null) throw new KafkaDecodeError("an assignment that may not be null is null");
    return { memberId: member, assignment: assignment.slice() };
  }, 6);
  return { groupId, generationId, memberId, groupInstanceId, assignments };
}

/** The whole response (header and body) to a SyncGroup request with `header`. */
export function encodeSyncGroupResponse(header: RequestHeader, response: SyncGroupResponse): Uint8Array {
  const version = header.apiVersion;
  if (version < syncGroupVersionMin || version > syncGroupVersionMax) {
    throw new RangeError(`Cannot encode a SyncGroup v${version} response: it is not served`);
  }
  const bytesMax = 32 + response.assignment.length;
  const writer = new KafkaWriter(bytesMax, Math.min(bytesMax, 1024));
  writeResponseHeader(writer, { ...header, apiKey: apiKey.syncGroup });
  if (version >= 1) writer.int32(0);
  writer.int16(response.errorCode).nullableBytes(response.assignment);
  return writer.bytes();
}
