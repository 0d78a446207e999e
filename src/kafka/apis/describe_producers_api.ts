import type { KafkaApi, KafkaServing } from "../kafka_api.ts";
import { kafkaErrorCode, kafkaErrorOf } from "../kafka_errors.ts";
import { apiKey } from "../wire/frame_codec.ts";
import {
  type DescribedPartition,
  describeProducersVersionMax,
  describeProducersVersionMin,
  encodeDescribeProducersResponse,
  readDescribeProducersRequest,
} from "./describe_producers_codec.ts";

/**
 * DescribeProducers 0: each asked-for partition's idempotent producers as its log on this node holds
 * them (a follower answers from its replica, as Kafka's does): id, epoch, last sequence and the
 * timestamp of its last batch. An unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION.
 */
export const describeProducersApi: KafkaApi = {
  apiKey: apiKey.describeProducers,
  name: "describe_producers",
  minVersion: describeProducersVersionMin,
  maxVersion: describeProducersVersionMax,
  handle(header, body, serving) {
    const request = readDescribeProducersRequest(header.apiVersion, body);
    const topics = request.topics.map((topic) => ({
      name: topic.name,
      partitions: topic.partitionIndexes.map((index) => describePartition(topic.name, index, serving)),
    }));
    const errorCount = topics.reduce((n, t) => n + t.partitions.filter((p) => p.errorCode !== 0).length, 0);
    return Promise.resolve({ pieces: [encodeDescribeProducersResponse(header, topics)], errorCount });
  },
};

function describePartition(topic: string, index: number, serving: KafkaServing): DescribedPartition {
  const refused = (errorCode: number): DescribedPartition => ({
    partitionIndex: index,
    errorCode,
    errorMessage: null,
    activeProducers: [],
  });
  if (!serving.catalog.has(topic)) return refused(kafkaErrorCode.unknownTopicOrPartition);
  try {
    const entries = serving.data.producers(serving.catalog.streamName, topic, index);
    return {
      partitionIndex: index,
      errorCode: kafkaErrorCode.none,
      errorMessage: null,
      activeProducers: entries.map((e) => ({
        producerId: e.producerId,
        producerEpoch: e.epoch,
        // A producer known by a transaction marker alone has no batch: -1, as Kafka answers one.
        lastSequence: e.batches.at(-1)?.lastSequence ?? -1,
        lastTimestampMs: e.lastTimestampMs,
        coordinatorEpoch: e.coordinatorEpoch ?? -1,
        currentTxnStartOffset: e.txnFirstOffset ?? -1,
      })),
    };
  } catch (error) {
    return refused(kafkaErrorOf(error, serving.logger, `describe the producers of ${topic}/${index}`));
  }
}
