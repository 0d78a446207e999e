import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * Fetch (key 1), versions 4 to 11, without incremental fetches (KIP-227): the request's fetch-context
 * id and epoch are read and answered with id 0, so a client sends its whole fetch each time. The
 * request is the wait (`max_wait_ms`, `min_bytes`), the response's byte limit, and per partition an
 * offset and a byte limit; from v7 the fetch-context fields and forgotten topics, from v9 the leader
 * epoch, from v11 the rack. The response holds, per partition, an error code, the high watermark, the
 * last stable offset and (from v5) the log start offset, no aborted transactions, (from v11) no
 * preferred replica, and the record batches as the log holds them.
 */

export const fetchVersionMin = 4;
export const fetchVersionMax = 11;

export interface FetchPartitionRequest {
  partition: number;
  currentLeaderEpoch: number;
  fetchOffset: number;
  /** The most bytes of this partition the response may carry (the first batch goes whole anyway). */
  partitionMaxBytes: number;
}

export interface FetchTopicRequest {
  name: string;
  partitions: FetchPartitionRequest[];
}

export interface FetchRequest {
  maxWaitMs: number;
  minBytes: number;
  maxBytes: number;
  isolationLevel: number;
  sessionId: number;
  sessionEpoch: number;
  topics: FetchTopicRequest[];
}

export interface FetchPartitionResponse {
  partition: number;
  errorCode: number;
  highWatermark: number;
  lastStableOffset: number;
  logStartOffset: number;
  /**
   * The aborted transactions among the records (producer id and first offset), for a read_committed
   * fetch; null for a read_uncommitted one.
   */
  abortedTransactions: readonly { producerId: number; firstOffset: number }[] | null;
  /** Whole batches as stored, in pieces that go out as they are; empty: no records. */
  records: readonly Uint8Array[];
}

export interface FetchTopicResponse {
  name: string;
  partitions: FetchPartitionResponse[];
}

/** Reads the body of a Fetch request of a version served. */
export function readFetchRequest(version: number, body: KafkaReader): FetchRequest {
  if (version < fetchVersionMin || version > fetchVersionMax) {
    throw new KafkaDecodeError(`Fetch v${version} is not read here`);
  }
  body.int32(); // replica id: -1 from a consumer
  const maxWaitMs = body.int32();
  const minBytes = body.int32();
  const maxBytes = body.int32();
  const isolationLevel = body.int8();
  const sessionId = version >= 7 ? body.int32() : 0;
  const sessionEpoch = version >= 7 ? body.int32() : -1;
  const topics = body.array((t) => ({
    name: t.string(),
    partitions: t.array((p) => {
      const partition = p.int32();
      const currentLeaderEpoch = version >= 9 ? p.int32() : -1;
      const fetchOffset = p.int64();
      if (version >= 5) p.int64(); // the follower's log start offset
      return { partition, currentLeaderEpoch, fetchOffset, partitionMaxBytes: p.int32() };
    }, 16),
  }), 6);
  if (version >= 7) body.array((t) => [t.string(), t.array((p) => p.int32(), 4)], 6);
  if (version >= 11) body.string();
  return { maxWaitMs, minBytes, maxBytes, isolationLevel, sessionId, sessionEpoch, topics };
}

/** Bound on a response's own fields (not its records): enough for thousands of partitions. */
const structureBytesMax = 16 * 1024 * 1024;

/**
 * The whole response (header and body) to a Fetch request with `header`, as pieces: the response's
 * own fields in small buffers, and each partition's record pieces as they were given, uncopied.
 */
export function encodeFetchResponse(
  header: RequestHeader,
  topics: readonly FetchTopicResponse[],
  errorCode = 0,
): Uint8Array[] {
  const version = header.apiVersion;
  const pieces: Uint8Array[] = [];
  let writer = new KafkaWriter(structureBytesMax, 512);
  writeResponseHeader(writer, { ...header, apiKey: apiKey.fetch });
  writer.int32(0);
  if (version >= 7) writer.int16(errorCode).int32(0);
  writer.int32(topics.length);
  for (const topic of topics) {
    writer.nullableString(topic.name).int32(topic.partitions.length);
    for (const p of topic.partitions) {
      writer.int32(p.partition).int16(p.errorCode).int64(p.highWatermark).int64(p.lastStableOffset);
      if (version >= 5) writer.int64(p.logStartOffset);
      if (p.abortedTransactions === null) writer.int32(-1);
      else {
        writer.int32(p.abortedTransactions.length);
        for (const aborted of p.abortedTransactions) {
          writer.int64(aborted.producerId).int64(aborted.firstOffset);
        }
      }
      if (version >= 11) writer.int32(-1);
      const recordBytes = p.records.reduce((n, r) => n + r.length, 0);
      writer.int32(recordBytes);
      if (recordBytes === 0) continue;
      pieces.push(writer.bytes());
      pieces.push(...p.records);
      writer = new KafkaWriter(structureBytesMax, 512);
    }
  }
  if (writer.length > 0) pieces.push(writer.bytes());
  return pieces;
}
