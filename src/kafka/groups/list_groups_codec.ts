import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * ListGroups (key 16), versions 0 to 3: the groups this broker coordinates, each with its protocol
 * type. The request has no fields; v1 adds the throttle time to the response; v3 is the first
 * flexible version (compact strings and arrays, tagged fields).
 */

export const listGroupsVersionMin = 0;
export const listGroupsVersionMax = 3;

/** A ListGroups request of the versions served carries no fields. */
export type ListGroupsRequest = Record<string, never>;

export interface ListedGroup {
  /** The group's id. */
  groupId: string;
  /** Its protocol type ("consumer" for consumers), or "" when it has none. */
  protocolType: string;
}

export interface ListGroupsResponse {
  /** The error code, or 0. */
  errorCode: number;
  /** The groups coordinated here. */
  groups: ListedGroup[];
}

/** Reads the body of a ListGroups request of a version served. */
export function readListGroupsRequest(version: number, body: KafkaReader): ListGroupsRequest {
  if (version < listGroupsVersionMin || version > listGroupsVersionMax) {
    throw new KafkaDecodeError(`ListGroups v${version} is not read here`);
  }
  if (version >= 3) body.skipTaggedFields();
  return {};
}

/** The whole response (header and body) to a ListGroups request with `header`. */
export function encodeListGroupsResponse(header: RequestHeader, response: ListGroupsResponse): Uint8Array {
  const version = header.apiVersion;
  if (version < listGroupsVersionMin || version > listGroupsVersionMax) {
    throw new RangeError(`Cannot encode a ListGroups v${version} response: it is not served`);
  }
  const flexible = version >= 3;
  const bytesMax = 32 +
    response.groups.reduce((n, g) => n + 11 + 3 * (g.groupId.length + g.protocolType.length), 0);
  const writer = new KafkaWriter(bytesMax, Math.min(bytesMax, 1024));
  writeResponseHeader(writer, { ...header, apiKey: apiKey.listGroups });
  if (version >= 1) writer.int32(0);
  writer.int16(response.errorCode);
  if (flexible) {
    writer.compactArray(response.groups, (w, g) => {
      w.compactNullableString(g.groupId).compactNullableString(g.protocolType).emptyTaggedFields();
    });
    writer.emptyTaggedFields();
  } else {
    writer.array(response.groups, (w, g) => w.nullableString(g.groupId).nullableString(g.protocolType));
  }
  return writer.bytes();
}
