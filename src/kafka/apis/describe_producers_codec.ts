import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * DescribeProducers (key 61), version 0, flexible: the idempotent and transactional producers each
 * asked-for partition keeps state for (KIP-664), for tooling.
 */

export const describeProducersVersionMin = 0;
export const describeProducersVersionMax = 0;

/** Topics and partitions one request may name at most: each is answered with a list of producers. */
export const describedPartitionsMax = 10_000;

export interface DescribeProducersRequest {
  topics: { name: string; partitionIndexes: number[] }[];
}

export interface DescribedProducer {
  producerId: number;
  producerEpoch: number;
  lastSequence: number;
  lastTimestampMs: number;
  /** A transactional producer's coordinator epoch; -1 for an idempotent one. */
  coordinatorEpoch: number;
  /** Where its open transaction starts; -1 with none. */
  currentTxnStartOffset: number;
}

export interface DescribedPartition {
  partitionIndex: number;
  errorCode: number;
  errorMessage: string | null;
  activeProducers: DescribedProducer[];
}

export interface DescribedTopic {
  name: string;
  partitions: DescribedPartition[];
}

/** Reads the body of a DescribeProducers request; more than `describedPartitionsMax` partitions is refused. */
export function readDescribeProducersRequest(version: number, body: KafkaReader): DescribeProducersRequest {
  if (version < describeProducersVersionMin || version > describeProducersVersionMax) {
    throw new KafkaDecodeError(`DescribeProducers v${version} is not read here`);
  }
  let partitions = 0;
  const topics = body.compactArray((t) => {
    const name = t.compactString();
    const partitionIndexes = t.compactArray((p) => p.int32(), 4);
    t.skipTaggedFields();
    partitions += partitionIndexes.length;
    if (partitions > describedPartitionsMax) {
      throw new KafkaDecodeError(`a DescribeProducers of more than ${describedPartitionsMax} partitions`);
    }
    return { name, partitionIndexes };
  }, 3);
  body.skipTaggedFields();
  return { topics };
}

/** The whole response (header and body) to a DescribeProducers request with `header`. */
export function encodeDescribeProducersResponse(
  header: RequestHeader,
  topics: readonly DescribedTopic[],
): Uint8Array {
  if (header.apiVersion !== 0) {
    throw new RangeError(
      `Cannot encode a DescribeProducers v${header.apiVersion} response: it is not served`,
    );
  }
  const writer = new KafkaWriter(64 * 1024 * 1024, 1024);
  writeResponseHeader(writer, { ...header, apiKey: apiKey.describeProducers });
  writer.int32(0);
  writer.compactArray(topics, (w, topic) => {
    w.compactNullableString(topic.name);
    w.compactArray(topic.partitions, (pw, p) => {
      pw.int32(p.partitionIndex).int16(p.errorCode).compactNullableString(p.errorMessage);
      pw.compactArray(p.activeProducers, (aw, a) => {
        aw.int64(a.producerId).int32(a.producerEpoch).int32(a.lastSequence).int64(a.lastTimestampMs);
        aw.int32(a.coordinatorEpoch).int64(a.currentTxnStartOffset).emptyTaggedFields();
      });
      pw.emptyTaggedFields();
    });
    w.emptyTaggedFields();
  });
  writer.emptyTaggedFields();
  return writer.bytes();
}
