import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * OffsetFetch (key 9), versions 1 to 7: a consumer reads the offsets its group committed. From v2
 * a null topic list asks for every topic the group committed, and the response has an error for
 * the whole request (before it, such an error is answered on every partition); v3 adds the throttle
 * time; v5 the committed leader epoch; v6 is the first flexible version; v7 asks for stable offsets
 * only (`requireStable`: a partition with a transaction's offset pending is UNSTABLE_OFFSET_COMMIT).
 */

export const offsetFetchVersionMin = 1;
export const offsetFetchVersionMax = 7;

export interface OffsetFetchTopicRequest {
  /** The topic. */
  name: string;
  /** Its partitions to read the offsets of. */
  partitionIndexes: number[];
}

export interface OffsetFetchRequest {
  /** The group whose offsets are read. */
  groupId: string;
  /** The topics asked for; null (from v2) for every topic the group committed. */
  topics: OffsetFetchTopicRequest[] | null;
  /** v7 on: only offsets no open transaction may still change. */
  requireStable: boolean;
}

export interface OffsetFetchPartitionResponse {
  /** The partition. */
  partitionIndex: number;
  /** The committed offset, or -1 when none is. */
  committedOffset: number;
  /** The leader epoch committed with it, or -1; sent from v5. */
  committedLeaderEpoch: number;
  /** The metadata committed with it, or null. */
  metadata: string | null;
  /** The error code for this partition, or 0. */
  errorCode: number;
}

export interface OffsetFetchTopicResponse {
  /** The topic. */
  name: string;
  /** The answer per partition. */
  partitions: OffsetFetchPartitionResponse[];
}

export interface OffsetFetchResponse {
  /** The answer per topic. */
  topics: OffsetFetchTopicResponse[];
  /** The error code for the whole request, or 0; sent from v2. */
  errorCode: number;
}

/** Reads the body of an OffsetFetch request of a version served. */
export function readOffsetFetchRequest(version: number, body: KafkaReader): OffsetFetchRequest {
  if (version < offsetFetchVersionMin || version > offsetFetchVersionMax) {
    throw new KafkaDecodeError(`OffsetFetch v${version} is not read here`);
  }
  if (version >= 6) return readFlexibleRequest(version, body);
  const groupId = body.string();
  const topic = (t: KafkaReader) => ({ name: t.string(), partitionIndexes: t.array((p) => p.int32(), 4) });
  // Each topic takes at least its name's int16 length and its partitions' int32 count.
  const topics = version >= 2 ? body.nullableArray(topic, 6) : body.array(topic, 6);
  return { groupId, topics, requireStable: false };
}

function readFlexibleRequest(version: number, body: KafkaReader): OffsetFetchRequest {
  const groupId = body.compactString();
  const topic = (t: KafkaReader) => {
    const name = t.compactString();
    const partitionIndexes = t.compactArray((p) => p.int32(), 4);
    t.skipTaggedFields();
    return { name, partitionIndexes };
  };
  const topics = body.compactNullableArray(topic, 3);
  const requireStable = version >= 7 ? body.boolean() : false;
  body.skipTaggedFields();
  return { groupId, topics, requireStable };
}

/** The whole response (header and body) to an OffsetFetch request with `header`. */
export function encodeOffsetFetchResponse(header: RequestHeader, response: OffsetFetchResponse): Uint8Array {
  const version = header.apiVersion;
  if (version < offsetFetchVersionMin || version > offsetFetchVersionMax) {
    throw new RangeError(`Cannot encode an OffsetFetch v${version} response: it is not served`);
  }
  const bytesMax = 16 + response.topics.reduce(
    (n, t) =>
      t.partitions.reduce((m, p) => m + 20 + 3 * (p.metadata?.length ?? 0), n + 6 + 3 * t.name.length),
    0,
  );
  const writer = new KafkaWriter(bytesMax, Math.min(bytesMax, 1024));
  writeResponseHeader(writer, { ...header, apiKey: apiKey.offsetFetch });
  if (version >= 3) writer.int32(0);
  const flexible = version >= 6;
  const partition = (pw: KafkaWriter, p: OffsetFetchPartitionResponse) => {
    pw.int32(p.partitionIndex).int64(p.committedOffset);
    if (version >= 5) pw.int32(p.committedLeaderEpoch);
    if (flexible) pw.compactNullableString(p.metadata).int16(p.errorCode).emptyTaggedFields();
    else pw.nullableString(p.metadata).int16(p.errorCode);
  };
  const topic = (w: KafkaWriter, t: OffsetFetchTopicResponse) => {
    if (flexible) w.compactNullableString(t.name).compactArray(t.partitions, partition).emptyTaggedFields();
    else w.nullableString(t.name).array(t.partitions, partition);
  };
  if (flexible) writer.compactArray(response.topics, topic);
  else writer.array(response.topics, topic);
  if (version >= 2) writer.int16(response.errorCode);
  if (flexible) writer.emptyTaggedFields();
  return writer.bytes();
}
