import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * Metadata (key 3), versions 0 to 8: the brokers, and each topic's partitions with their leader.
 * A v0 request with no topics asks for every topic; from v1 an empty list asks for none and null
 * for every one. v4 adds whether a topic asked for may be created; v8 whether authorized operations
 * are wanted (answered as unknown). The response grows by version: racks, the controller and
 * `is_internal` from v1, the cluster id from v2, the throttle time from v3, offline replicas from
 * v5, leader epochs from v7, authorized operations from v8.
 */

export const metadataVersionMin = 0;
export const metadataVersionMax = 8;

/** Kafka's "unknown" for authorized operations (INT32_MIN): the server does not report them. */
const authorizedOperationsUnknown = -2147483648;

export interface MetadataRequest {
  /** Null: every topic. */
  topics: string[] | null;
  allowAutoTopicCreation: boolean;
}

export interface MetadataBroker {
  nodeId: number;
  host: string;
  port: number;
  rack: string | null;
}

export interface MetadataPartition {
  errorCode: number;
  partitionIndex: number;
  leaderId: number;
  leaderEpoch: number;
  replicaNodes: number[];
  isrNodes: number[];
  offlineReplicas: number[];
}

export interface MetadataTopic {
  errorCode: number;
  name: string;
  isInternal: boolean;
  partitions: MetadataPartition[];
}

export interface MetadataResponse {
  brokers: MetadataBroker[];
  clusterId: string | null;
  controllerId: number;
  topics: MetadataTopic[];
}

/** Reads the body of a Metadata request of a version served. */
export function readMetadataRequest(version: number, body: KafkaReader): MetadataRequest {
  if (version < metadataVersionMin || version > metadataVersionMax) {
    throw new KafkaDecodeError(`Metadata v${version} is not read here`);
  }
  // Each name takes at least its int16 length.
  const names = version === 0 ? body.array((r) => r.string(), 2) : body.nullableArray((r) => r.string(), 2);
  const topics = version === 0 && names!.length === 0 ? null : names;
  const allowAutoTopicCreation = version >= 4 ? body.boolean() : true;
  if (version >= 8) {
    body.boolean();
    body.boolean();
  }
  return { topics, allowAutoTopicCreation };
}

/** The whole response (header and body) to a Metadata request with `header`, bounded by `bytesMax`. */
export function encodeMetadataResponse(
  header: RequestHeader,
  response: MetadataResponse,
  bytesMax: number,
): Uint8Array {
  const version = header.apiVersion;
  const writer = new KafkaWriter(bytesMax, 1024);
  writeResponseHeader(writer, { ...header, apiKey: apiKey.metadata });
  if (version >= 3) writer.int32(0);
  writer.array(response.brokers, (w, b) => {
    w.int32(b.nodeId).nullableString(b.host).int32(b.port);
    if (version >= 1) w.nullableString(b.rack);
  });
  if (version >= 2) writer.nullableString(response.clusterId);
  if (version >= 1) writer.int32(response.controllerId);
  writer.array(response.topics, (w, t) => writeTopic(w, t, version));
  if (version >= 8) writer.int32(authorizedOperationsUnknown);
  return writer.bytes();
}

function writeTopic(w: KafkaWriter, topic: MetadataTopic, version: number): void {
  w.int16(topic.errorCode).nullableString(topic.name);
  if (version >= 1) w.boolean(topic.isInternal);
  w.array(topic.partitions, (pw, p) => {
    pw.int16(p.errorCode).int32(p.partitionIndex).int32(p.leaderId);
    if (version >= 7) pw.int32(p.leaderEpoch);
    pw.array(p.replicaNodes, (x, n) => x.int32(n));
    pw.array(p.isrNodes, (x, n) => x.int32(n));
    if (version >= 5) pw.array(p.offlineReplicas, (x, n) => x.int32(n));
  });
  if (version >= 8) w.int32(authorizedOperationsUnknown);
}
