import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * ListOffsets (key 2), versions 1 to 5: per partition, a timestamp to look up: -2 the earliest
 * offset, -1 the latest (the next to be written), any other the first offset whose record's
 * timestamp is at or after it. From v2 the request has an isolation level and the response a
 * throttle time; from v4 a leader epoch each way.
 */

export const listOffsetsVersionMin = 1;
export const listOffsetsVersionMax = 5;

export const earliestTimestamp = -2;
export const latestTimestamp = -1;

export interface ListOffsetsPartitionRequest {
  partition: number;
  timestampMs: number;
}

export interface ListOffsetsRequest {
  /** 1: read_committed, whose latest offset is the last stable one; 0 before v2, which has none. */
  isolationLevel: number;
  topics: { name: string; partitions: ListOffsetsPartitionRequest[] }[];
}

export interface ListOffsetsPartitionResponse {
  partition: number;
  errorCode: number;
  /** The found record's timestamp; -1 for the earliest or latest offset, or none found. */
  timestampMs: number;
  /** -1 when no record has a timestamp at or after the one asked for. */
  offset: number;
}

export interface ListOffsetsTopicResponse {
  name: string;
  partitions: ListOffsetsPartitionResponse[];
}

/** Reads the body of a ListOffsets request of a version served. */
export function readListOffsetsRequest(version: number, body: KafkaReader): ListOffsetsRequest {
  if (version < listOffsetsVersionMin || version > listOffsetsVersionMax) {
    throw new KafkaDecodeError(`ListOffsets v${version} is not read here`);
  }
  body.int32(); // replica id
  const isolationLevel = version >= 2 ? body.int8() : 0;
  const topics = body.array((t) => ({
    name: t.string(),
    partitions: t.array((p) => {
      const partition = p.int32();
      if (version >= 4) p.int32(); // current leader epoch
      return { partition, timestampMs: p.int64() };
    }, 12),
  }), 6);
  return { isolationLevel, topics };
}

/** The whole response (header and body) to a ListOffsets request with `header`. */
export function encodeListOffsetsResponse(
  header: RequestHeader,
  topics: readonly ListOffsetsTopicResponse[],
): Uint8Array {
  const version = header.apiVersion;
  const bytesMax = 64 + topics.reduce((n, t) => n + 6 + 3 * t.name.length + t.partitions.length * 30, 0);
  const writer = new KafkaWriter(bytesMax, Math.min(bytesMax, 1024));
  writeResponseHeader(writer, { ...header, apiKey: apiKey.listOffsets });
  if (version >= 2) writer.int32(0);
  writer.array(topics, (w, t) => {
    w.nullableString(t.name);
    w.array(t.partitions, (pw, p) => {
      pw.int32(p.partition).int16(p.errorCode).int64(p.timestampMs).int64(p.offset);
      if (version >= 4) pw.int32(0);
    });
  });
  return writer.bytes();
}
