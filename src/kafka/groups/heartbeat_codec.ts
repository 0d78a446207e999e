import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * Heartbeat (key 12), versions 0 to 3: a member says it is alive in its generation; the answer's
 * error tells it to rejoin (REBALANCE_IN_PROGRESS) or that it is gone (UNKNOWN_MEMBER_ID). v1 adds
 * the throttle time to the response; v3 adds the static `group.instance.id` to the request.
 */

export const heartbeatVersionMin = 0;
export const heartbeatVersionMax = 3;

export interface HeartbeatRequest {
  /** The group. */
  groupId: string;
  /** The generation the member is in. */
  generationId: number;
  /** The member's id. */
  memberId: string;
  /** The static member's `group.instance.id`; null for a dynamic member, and before v3. */
  groupInstanceId: string | null;
}

export interface HeartbeatResponse {
  /** The error code, or 0. */
  errorCode: number;
}

/** Reads the body of a Heartbeat request of a version served. */
export function readHeartbeatRequest(version: number, body: KafkaReader): HeartbeatRequest {
  if (version < heartbeatVersionMin || version > heartbeatVersionMax) {
    throw new KafkaDecodeError(`Heartbeat v${version} is not read here`);
  }
  const groupId = body.string();
  const generationId = body.int32();
  const memberId = body.string();
  const groupInstanceId = version >= 3 ? body.nullableString() : null;
  return { groupId, generationId, memberId, groupInstanceId };
}

/** The whole response (header and body) to a Heartbeat request with `header`. */
export function encodeHeartbeatResponse(header: RequestHeader, response: HeartbeatResponse): Uint8Array {
  const version = header.apiVersion;
  if (version < heartbeatVersionMin || version > heartbeatVersionMax) {
    throw new RangeError(`Cannot encode a Heartbeat v${version} response: it is not served`);
  }
  const writer = new KafkaWriter(16, 16);
  writeResponseHeader(writer, { ...header, apiKey: apiKey.heartbeat });
  if (version >= 1) writer.int32(0);
  writer.int16(response.errorCode);
  return writer.bytes();
}
