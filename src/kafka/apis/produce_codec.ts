import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * Produce (key 0). Versions 3 to 7 are served: the request is the transactional id (from v3), acks,
 * a timeout and, per topic and partition, the records (RecordBatch v2, as many batches as the
 * client put there). Versions 0 to 2 (magic 0 and 1 message sets) are advertised, because
 * librdkafka checks for them before it compresses, and answered UNSUPPORTED_VERSION per partition.
 * The response is, per partition, an error code, the base offset, from v2 the log append time and
 * from v5 the log start offset; from v1 a throttle time after the topics.
 */

export const produceVersionAdvertisedMin = 0;
/** The oldest version whose records are read: RecordBatch v2 came with Produce v3. */
export const produceVersionServedMin = 3;
export const produceVersionMax = 7;

export interface ProducePartitionData {
  index: number;
  /** A view into the request frame; null when the client sent none. */
  records: Uint8Array | null;
}

export interface ProduceTopicData {
  name: string;
  partitions: ProducePartitionData[];
}

export interface ProduceRequest {
  transactionalId: string | null;
  /** 0: no response; 1: after the leader's write; -1: after every in-sync replica's. */
  acks: number;
  timeoutMs: number;
  topics: ProduceTopicData[];
}

export interface ProducePartitionResponse {
  index: number;
  errorCode: number;
  /** -1 with an error. */
  baseOffset: number;
  /** -1 unless the topic stamps log append time. */
  logAppendTimeMs: number;
  logStartOffset: number;
}

export interface ProduceTopicResponse {
  name: string;
  partitions: ProducePartitionResponse[];
}

/** Reads the body of a Produce request of versions 0 to 7 (0 to 2 only to answer them). */
export function readProduceRequest(version: number, body: KafkaReader): ProduceRequest {
  if (version < 0 || version > produceVersionMax) {
    throw new KafkaDecodeError(`Produce v${version} is not read here`);
  }
  const transactionalId = version >= 3 ? body.nullableString() : null;
  const acks = body.int16();
  const timeoutMs = body.int32();
  // A topic takes at least its name's length and its array's count; a partition its index and length.
  const topics = body.array((t) => ({
    name: t.string(),
    partitions: t.array((p) => ({ index: p.int32(), records: p.nullableBytes() }), 8),
  }), 6);
  return { transactionalId, acks, timeoutMs, topics };
}

/** Bytes of a response's fixed part per partition, at most: index, error, three int64s. */
const partitionResponseBytesMax = 4 + 2 + 8 + 8 + 8;

/** The whole response (header and body) to a Produce request with `header`. */
export function encodeProduceResponse(
  header: RequestHeader,
  topics: readonly ProduceTopicResponse[],
): Uint8Array {
  const version = header.apiVersion;
  const bytesMax = 64 + topics.reduce(
    (n, t) => n + 6 + 3 * t.name.length + t.partitions.length * partitionResponseBytesMax,
    0,
  );
  const writer = new KafkaWriter(bytesMax, Math.min(bytesMax, 1024));
  writeResponseHeader(writer, { ...header, apiKey: apiKey.produce });
  writer.array(topics, (w, t) => {
    w.nullableString(t.name);
    w.array(t.partitions, (pw, p) => {
      pw.int32(p.index).int16(p.errorCode).int64(p.baseOffset);
      if (version >= 2) pw.int64(p.logAppendTimeMs);
      if (version >= 5) pw.int64(p.logStartOffset);
    });
  });
  if (version >= 1) writer.int32(0);
  return writer.bytes();
}
