import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * FindCoordinator (key 10), versions 0 to 3: which broker coordinates a consumer group (or a
 * transactional id). v1 adds the key type to the request and the throttle time and an error
 * message to the response; v3 is the first flexible version (compact strings, tagged fields).
 */

export const findCoordinatorVersionMin = 0;
export const findCoordinatorVersionMax = 3;

/** The key types of FindCoordinator: a consumer group's or a transactional producer's. */
export const coordinatorKeyType = { group: 0, transaction: 1 } as const;

export interface FindCoordinatorRequest {
  /** The group id (or transactional id) whose coordinator is asked for. */
  key: string;
  /** What the key names (`coordinatorKeyType`); a group before v1, which does not send it. */
  keyType: number;
}

export interface FindCoordinatorResponse {
  /** The error code, or 0. */
  errorCode: number;
  /** Why it failed, or null; not sent before v1. */
  errorMessage: string | null;
  /** The coordinator's node id, or -1 with an error. */
  nodeId: number;
  /** The coordinator's host, or "" with an error. */
  host: string;
  /** The coordinator's port, or -1 with an error. */
  port: number;
}

/** Reads the body of a FindCoordinator request of a version served. */
export function readFindCoordinatorRequest(version: number, body: KafkaReader): FindCoordinatorRequest {
  if (version < findCoordinatorVersionMin || version > findCoordinatorVersionMax) {
    throw new KafkaDecodeError(`FindCoordinator v${version} is not read here`);
  }
  const flexible = version >= 3;
  const key = flexible ? body.compactString() : body.string();
  const keyType = version >= 1 ? body.int8() : coordinatorKeyType.group;
  if (flexible) body.skipTaggedFields();
  return { key, keyType };
}

/** The whole response (header and body) to a FindCoordinator request with `header`. */
export function encodeFindCoordinatorResponse(
  header: RequestHeader,
  response: FindCoordinatorResponse,
): Uint8Array {
  const version = header.apiVersion;
  if (version < findCoordinatorVersionMin || version > findCoordinatorVersionMax) {
    throw new RangeError(`Cannot encode a FindCoordinator v${version} response: it is not served`);
  }
  const flexible = version >= 3;
  const bytesMax = 64 + 3 * ((response.errorMessage?.length ?? 0) + response.host.length);
  const writer = new KafkaWriter(bytesMax, bytesMax);
  writeResponseHeader(writer, { ...header, apiKey: apiKey.findCoordinator });
  if (version >= 1) writer.int32(0);
  writer.int16(response.errorCode);
  if (flexible) {
    writer.compactNullableString(response.errorMessage).int32(response.nodeId);
    writer.compactNullableString(response.host).int32(response.port).emptyTaggedFields();
  } else {
    if (version >= 1) writer.nullableString(response.errorMessage);
    writer.int32(response.nodeId).nullableString(response.host).int32(response.port);
  }
  return writer.bytes();
}
