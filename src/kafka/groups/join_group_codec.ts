import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * JoinGroup (key 11), versions 2 to 5: a member asks to join a group with the protocols (assignors)
 * it supports; the answer names the generation, the chosen protocol and the leader, and to the
 * leader every member with its metadata. From v4 a new member is first given its id
 * (MEMBER_ID_REQUIRED) and joins again with it; v5 adds the static `group.instance.id` to the
 * request and to each member of the response.
 */

export const joinGroupVersionMin = 2;
export const joinGroupVersionMax = 5;

export interface JoinGroupProtocol {
  /** The protocol's name (an assignor's, such as "range"). */
  name: string;
  /** The member's metadata for it (its subscription): a copy, kept past the request. */
  metadata: Uint8Array;
}

export interface JoinGroupRequest {
  /** The group to join. */
  groupId: string;
  /** How long the coordinator waits for a heartbeat before it removes the member. */
  sessionTimeoutMs: number;
  /** How long the coordinator waits for every member to rejoin during a rebalance. */
  rebalanceTimeoutMs: number;
  /** The id the coordinator gave the member; "" on a first join. */
  memberId: string;
  /** The static member's `group.instance.id`; null for a dynamic member, and before v5. */
  groupInstanceId: string | null;
  /** The class of protocols, "consumer" for consumers. */
  protocolType: string;
  /** The protocols the member supports, in its order of preference. */
  protocols: JoinGroupProtocol[];
}

export interface JoinGroupMember {
  /** The member's id. */
  memberId: string;
  /** Its `group.instance.id`, or null; not sent before v5. */
  groupInstanceId: string | null;
  /** Its metadata for the chosen protocol. */
  metadata: Uint8Array;
}

export interface JoinGroupResponse {
  /** The error code, or 0. */
  errorCode: number;
  /** The generation joined, or -1 with an error. */
  generationId: number;
  /** The protocol the coordinator chose, or "" with an error. */
  protocolName: string;
  /** The leader's member id, or "" with an error. */
  leader: string;
  /** The member's id, the one given on a first join (also with MEMBER_ID_REQUIRED). */
  memberId: string;
  /** Every member to the leader; none to the others. */
  members: JoinGroupMember[];
}

/** Reads the body of a JoinGroup request of a version served. */
export function readJoinGroupRequest(version: number, body: KafkaReader): JoinGroupRequest {
  if (version < joinGroupVersionMin || version > joinGroupVersionMax) {
    throw new KafkaDecodeError(`JoinGroup v${version} is not read here`);
  }
  const groupId = body.string();
  const sessionTimeoutMs = body.int32();
  const rebalanceTimeoutMs = body.int32();
  const memberId = body.string();
  const groupInstanceId = version >= 5 ? body.nullableString() : null;
  const protocolType = body.string();
  // Each protocol takes at least its name's int16 length and its metadata's int32 length.
  const protocols = body.array(
    (p) => ({ name: p.string(), metadata: copiedBytes(p, "protocol metadata") }),
    6,
  );
  return {
    groupId,
    sessionTimeoutMs,
    rebalanceTimeoutMs,
    memberId,
    groupInstanceId,
    protocolType,
    protocols,
  };
}

/** The whole response (header and body) to a JoinGroup request with `header`. */
export function encodeJoinGroupResponse(header: RequestHeader, response: JoinGroupResponse): Uint8Array {
  const version = header.apiVersion;
  if (version < joinGroupVersionMin || version > joinGroupVersionMax) {
    throw new RangeError(`Cannot encode a JoinGroup v${version} response: it is not served`);
  }
  const { protocolName, leader, memberId, members } = response;
  const bytesMax = 64 + 3 * (protocolName.length + leader.length + memberId.length) +
    members.reduce(
      (n, m) => n + 8 + 3 * (m.memberId.length + (m.groupInstanceId?.length ?? 0)) + m.metadata.length,
      0,
    );
  const writer = new KafkaWriter(bytesMax, Math.min(bytesMax, 1024));
  writeResponseHeader(writer, { ...header, apiKey: apiKey.joinGroup });
  writer.int32(0).int16(response.errorCode).int32(response.generationId);
  writer.nullableString(protocolName).nullableString(leader).nullableString(memberId);
  writer.array(members, (w, m) => {
    w.nullableString(m.memberId);
    if (version >= 5) w.nullableString(m.groupInstanceId);
    w.nullableBytes(m.metadata);
  });
  return writer.bytes();
}

/** Non-null int32-length bytes, copied out of the frame. */
function copiedBytes(reader: KafkaReader, what: string): Uint8Array {
  const bytes = reader.nullableBytes();
  if (bytes === null) throw new KafkaDecodeError(`${what} that may not be null is null`);
  return bytes.slice();
}
