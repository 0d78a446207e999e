import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * OffsetCommit (key 8), versions 2 to 7: a consumer stores, per partition, the offset it will
 * resume from, with optional metadata. Versions 2 to 4 carry a retention time (later ones leave it
 * to the broker); v3 adds the throttle time to the response; v6 a leader epoch per partition; v7
 * the static `group.instance.id`. A generation of -1 commits outside group management.
 */

export const offsetCommitVersionMin = 2;
export const offsetCommitVersionMax = 7;

export interface OffsetCommitPartitionRequest {
  /** The partition. */
  partitionIndex: number;
  /** The offset to resume from (the next record to consume). */
  committedOffset: number;
  /** The leader epoch of the last record consumed; -1 unknown, and before v6. */
  committedLeaderEpoch: number;
  /** The client's metadata for the commit, or null. */
  committedMetadata: string | null;
}

export interface OffsetCommitTopicRequest {
  /** The topic. */
  name: string;
  /** Its partitions to commit. */
  partitions: OffsetCommitPartitionRequest[];
}

export interface OffsetCommitRequest {
  /** The group committing. */
  groupId: string;
  /** The member's generation; -1 for a commit outside group management. */
  generationId: number;
  /** The member's id; "" outside group management. */
  memberId: string;
  /** The static member's `group.instance.id`; null for a dynamic member, and before v7. */
  groupInstanceId: string | null;
  /** How long to keep the offsets (versions 2 to 4); -1 the broker's default, and from v5. */
  retentionTimeMs: number;
  /** The topics to commit. */
  topics: OffsetCommitTopicRequest[];
}

export interface OffsetCommitPartitionResponse {
  /** The partition. */
  partitionIndex: number;
  /** The error code for this partition, or 0. */
  errorCode: number;
}

export interface OffsetCommitTopicResponse {
  /** The topic. */
  name: string;
  /** The answer per partition. */
  partitions: OffsetCommitPartitionResponse[];
}

export interface OffsetCommitResponse {
  /** The answer per topic: OffsetCommit has no error for the whole request. */
  topics: OffsetCommitTopicResponse[];
}

/** Reads the body of an OffsetCommit request of a version served. */
export function readOffsetCommitRequest(version: number, body: KafkaReader): OffsetCommitRequest {
  if (version < offsetCommitVersionMin || version > offsetCommitVersionMax) {
    throw new KafkaDecodeError(`OffsetCommit v${version} is not read here`);
  }
  const groupId = body.string();
  const generationId = body.int32();
  const memberId = body.string();
  const groupInstanceId = version >= 7 ? body.nullableString() : null;
  const retentionTimeMs = version <= 4 ? body.int64() : -1;
  // A partition takes at least its index, offset, (epoch) and metadata length.
  const partitionBytesMin = version >= 6 ? 18 : 14;
  const topics = body.array((t) => ({
    name: t.string(),
    partitions: t.array((p) => {
      const partitionIndex = p.int32();
      const committedOffset = p.int64();
      const committedLeaderEpoch = version >= 6 ? p.int32() : -1;
      return { partitionIndex, committedOffset, committedLeaderEpoch, committedMetadata: p.nullableString() };
    }, partitionBytesMin),
  }), 6);
  return { groupId, generationId, memberId, groupInstanceId, retentionTimeMs, topics };
}

/** The whole response (header and body) to an OffsetCommit request with `header`. */
export function encodeOffsetCommitResponse(
  header: RequestHeader,
  response: OffsetCommitResponse,
): Uint8Array {
  const version = header.apiVersion;
  if (version < offsetCommitVersionMin || version > offsetCommitVersionMax) {
    throw new RangeError(`Cannot encode an OffsetCommit v${version} response: it is not served`);
  }
  const bytesMax = 16 +
    response.topics.reduce((n, t) => n + 6 + 3 * t.name.length + t.partitions.length * 6, 0);
  const writer = new KafkaWriter(bytesMax, Math.min(bytesMax, 1024));
  writeResponseHeader(writer, { ...header, apiKey: apiKey.offsetCommit });
  if (version >= 3) writer.int32(0);
  writer.array(response.topics, (w, t) => {
    w.nullableString(t.name);
    w.array(t.partitions, (pw, p) => pw.int32(p.partitionIndex).int16(p.errorCode));
  });
  return writer.bytes();
}
