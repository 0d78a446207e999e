import { KafkaDecodeError, KafkaReader } from "./kafka_reader.ts";
import type { KafkaWriter } from "./kafka_writer.ts";

/**
 * The request header every Kafka request starts with, and the response header that answers it.
 * Request header v1 is api key, api version, correlation id and client id (an int16-length nullable
 * string); v2, for a flexible version of its API, adds tagged fields after the client id (which stays
 * int16-length). Response header v0 is the correlation id; v1, for flexible versions, adds tagged
 * fields, except for ApiVersions, whose response header is always v0 so that a client can read the
 * answer of a version it asked for before it knows which versions are served.
 */

export const apiKey = {
  produce: 0,
  fetch: 1,
  listOffsets: 2,
  metadata: 3,
  offsetCommit: 8,
  offsetFetch: 9,
  findCoordinator: 10,
  joinGroup: 11,
  heartbeat: 12,
  leaveGroup: 13,
  syncGroup: 14,
  describeGroups: 15,
  listGroups: 16,
  saslHandshake: 17,
  apiVersions: 18,
  createTopics: 19,
  deleteTopics: 20,
  describeConfigs: 32,
  saslAuthenticate: 36,
  deleteGroups: 42,
} as const;

/** The first flexible version of each API (Kafka's `flexibleVersions`); absent: none is. */
const firstFlexibleVersion: Readonly<Record<number, number>> = {
  [apiKey.produce]: 9,
  [apiKey.fetch]: 12,
  [apiKey.listOffsets]: 6,
  [apiKey.metadata]: 9,
  [apiKey.offsetCommit]: 8,
  [apiKey.offsetFetch]: 6,
  [apiKey.findCoordinator]: 3,
  [apiKey.joinGroup]: 6,
  [apiKey.heartbeat]: 4,
  [apiKey.leaveGroup]: 4,
  [apiKey.syncGroup]: 4,
  [apiKey.describeGroups]: 5,
  [apiKey.listGroups]: 3,
  [apiKey.apiVersions]: 3,
  [apiKey.createTopics]: 5,
  [apiKey.deleteTopics]: 4,
  [apiKey.describeConfigs]: 4,
  [apiKey.saslAuthenticate]: 2,
  [apiKey.deleteGroups]: 2,
};

export interface RequestHeader {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  clientId: string | null;
}

/** Whether `version` of the API is a flexible one (compact fields, tagged fields). */
export function isFlexible(api: number, version: number): boolean {
  const first = firstFlexibleVersion[api];
  return first !== undefined && version >= first;
}

/**
 * Reads a frame's request header; the reader is left at the body. An unknown API key still reads
 * (its header is v1), so that the answer can name it.
 */
export function readRequestHeader(frame: Uint8Array): { header: RequestHeader; body: KafkaReader } {
  const reader = new KafkaReader(frame);
  const api = reader.int16();
  const apiVersion = reader.int16();
  const correlationId = reader.int32();
  const clientId = reader.nullableString();
  if (apiVersion < 0) throw new KafkaDecodeError(`api version ${apiVersion} is negative`);
  if (isFlexible(api, apiVersion)) reader.skipTaggedFields();
  return { header: { apiKey: api, apiVersion, correlationId, clientId }, body: reader };
}

/** Writes the response header for a request with `header`. */
export function writeResponseHeader(writer: KafkaWriter, header: RequestHeader): void {
  writer.int32(header.correlationId);
  if (header.apiKey !== apiKey.apiVersions && isFlexible(header.apiKey, header.apiVersion)) {
    writer.emptyTaggedFields();
  }
}
