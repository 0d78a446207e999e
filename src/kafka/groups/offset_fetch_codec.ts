import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * OffsetFetch (key 9), versions 1 to 5: a consumer reads the offsets its group committed. From v2
 * a null topic list asks for every topic the group committed, and the response has an error for
 * the whole request (before it, such an error is answered on every partition); v3 adds the throttle
 * time; v5 the committed leader epoch.
 */

export const offsetFetchVersionMin = 1;
export const offsetFetchVersionMax = 5;

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
  const groupId = body.string();
  const topic = (t: KafkaReader) => ({ name: t.string(), partitionIndexes: t.array((p) => p.int32(), 4) });
  // Each topic takes at least its name's int16 length and its partitions' int32 count.
  const topics = version >= 2 ? body.nullableArray(topic, 6) : body.array(topic, 6);
  return { groupId, topics };
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
  writer.array(response.topics, (w, t) => {
    w.nullableString(t.name);
    w.array(t.partitions, (pw, p) => {
      pw.int32(p.partitionIndex).int64(p.committedOffset);
      if (version >= 5) pw.int32(p.committedLeaderEpoch);
      pw.nullableString(p.metadata).int16(p.errorCode);
    });
  });
  if (version >= 2) writer.int16(response.errorCode);
  return writer.bytes();
}
