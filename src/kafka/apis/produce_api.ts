import type { KafkaApi, KafkaServing } from "../kafka_api.ts";
import { kafkaErrorCode, kafkaErrorOf } from "../kafka_errors.ts";
import {
  encodeProduceResponse,
  type ProducePartitionData,
  type ProducePartitionResponse,
  type ProduceRequest,
  type ProduceTopicResponse,
  produceVersionAdvertisedMin,
  produceVersionMax,
  produceVersionServedMin,
  readProduceRequest,
} from "./produce_codec.ts";
import { apiKey } from "../wire/frame_codec.ts";
import { offsetsTopicName } from "../../groups/offsets/offsets_log.ts";
import { txnStateTopicName } from "../../transactions/log/txn_log.ts";

/**
 * Produce 0 to 7 (3 to 7 served): every partition's batches go to its log as sent, the partitions
 * of a request side by side, and the answer waits for all of them: with acks 1 until the leader's
 * write is durable as `[system] fsync` says, with -1 until every in-sync replica holds it (the
 * high watermark passed it, within the request's timeout; on one node the same as 1); acks 0
 * answers nothing. A partition another node leads answers NOT_LEADER_OR_FOLLOWER. An idempotent
 * producer's retry is answered with the offset it was first given; its gaps and old epochs with
 * OUT_OF_ORDER_SEQUENCE_NUMBER and INVALID_PRODUCER_EPOCH (`ProducerStates`). A transactional
 * producer's batches open its transaction on the partition; a batch outside it while one is open
 * is INVALID_TXN_STATE. Versions 0 to 2 and an acks value Kafka does not define are answered per
 * partition with UNSUPPORTED_VERSION and INVALID_REQUIRED_ACKS.
 */
export const produceApi: KafkaApi = {
  apiKey: apiKey.produce,
  name: "produce",
  minVersion: produceVersionAdvertisedMin,
  maxVersion: produceVersionMax,
  async handle(header, body, serving) {
    const request = readProduceRequest(header.apiVersion, body);
    const refusal = requestRefusal(header.apiVersion, request);
    const topics: ProduceTopicResponse[] = await Promise.all(request.topics.map(async (topic) => ({
      name: topic.name,
      partitions: await Promise.all(
        topic.partitions.map((p) =>
          refusal === null
            ? producePartition(topic.name, p, request, serving)
            : Promise.resolve(failed(p.index, refusal))
        ),
      ),
    })));
    if (request.acks === 0 && refusal === null) return null;
    const errorCount = topics.reduce((n, t) => n + t.partitions.filter((p) => p.errorCode !== 0).length, 0);
    return { pieces: [encodeProduceResponse(header, topics)], errorCount };
  },
};

/** The error every partition of the request is answered with, or null when it is served. */
function requestRefusal(version: number, request: ProduceRequest): number | null {
  if (version < produceVersionServedMin) return kafkaErrorCode.unsupportedVersion;
  if (request.acks !== 0 && request.acks !== 1 && request.acks !== -1) {
    return kafkaErrorCode.invalidRequiredAcks;
  }
  return null;
}

async function producePartition(
  topic: string,
  data: ProducePartitionData,
  request: ProduceRequest,
  serving: KafkaServing,
): Promise<ProducePartitionResponse> {
  if (!serving.catalog.has(topic)) {
    return failed(data.index, kafkaErrorCode.unknownTopicOrPartition);
  }
  // Only their coordinators append to the internal topics, as a Kafka broker refuses producers.
  if (topic === offsetsTopicName || topic === txnStateTopicName) {
    return failed(data.index, kafkaErrorCode.invalidTopicException);
  }
  if (data.records === null) return failed(data.index, kafkaErrorCode.corruptMessage);
  const stream = serving.catalog.streamName;
  try {
    const acks = request.acks as 0 | 1 | -1;
    const waitMs = Math.max(request.timeoutMs, 0);
    const result = await serving.data.produceBatches(stream, topic, data.index, data.records, acks, waitMs);
    const { start } = serving.data.offsetRange(stream, topic, data.index);
    return {
      index: data.index,
      errorCode: kafkaErrorCode.none,
      baseOffset: result.baseOffset,
      logAppendTimeMs: -1,
      logStartOffset: start,
    };
  } catch (error) {
    return failed(data.index, kafkaErrorOf(error, serving.logger, `produce to ${topic}/${data.index}`));
  }
}

function failed(index: number, errorCode: number): ProducePartitionResponse {
  return { index, errorCode, baseOffset: -1, logAppendTimeMs: -1, logStartOffset: -1 };
}
