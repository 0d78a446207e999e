import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * DeleteGroups (key 42), versions 0 and 1: deletes empty groups and their committed offsets,
 * answered per group (NON_EMPTY_GROUP for one with members, GROUP_ID_NOT_FOUND for none). The two
 * versions have the same fields; the response has the throttle time in both.
 */

export const deleteGroupsVersionMin = 0;
export const deleteGroupsVersionMax = 1;

export interface DeleteGroupsRequest {
  /** The ids of the groups to delete. */
  groupsNames: string[];
}

export interface DeletableGroupResult {
  /** The group's id. */
  groupId: string;
  /** The error code for this group, or 0 when it was deleted. */
  errorCode: number;
}

export interface DeleteGroupsResponse {
  /** The answer per group. */
  results: DeletableGroupResult[];
}

/** Reads the body of a DeleteGroups request of a version served. */
export function readDeleteGroupsRequest(version: number, body: KafkaReader): DeleteGroupsRequest {
  if (version < deleteGroupsVersionMin || version > deleteGroupsVersionMax) {
    throw new KafkaDecodeError(`DeleteGroups v${version} is not read here`);
  }
  // Each id takes at least its int16 length.
  return { groupsNames: body.array((r) => r.string(), 2) };
}

/** The whole response (header and body) to a DeleteGroups request with `header`. */
export function encodeDeleteGroupsResponse(
  header: RequestHeader,
  response: DeleteGroupsResponse,
): Uint8Array {
  const version = header.apiVersion;
  if (version < deleteGroupsVersionMin || version > deleteGroupsVersionMax) {
    throw new RangeError(`Cannot encode a DeleteGroups v${version} response: it is not served`);
  }
  const bytesMax = 16 + response.results.reduce((n, r) => n + 4 + 3 * r.groupId.length, 0);
  const writer = new KafkaWriter(bytesMax, Math.min(bytesMax, 1024));
  writeResponseHeader(writer, { ...header, apiKey: apiKey.deleteGroups });
  writer.int32(0);
  writer.array(response.results, (w, r) => w.nullableString(r.groupId).int16(r.errorCode));
  return writer.bytes();
}
