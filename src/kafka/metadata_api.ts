import { AlreadyExistsError, InvalidNameError, UnavailableError } from "../broker/broker_errors.ts";
import { topicNamePattern } from "../broker/names.ts";
import type { KafkaApi, KafkaServing } from "./kafka_api.ts";
import type { KafkaTopicInfo } from "./kafka_catalog.ts";
import { kafkaErrorCode } from "./kafka_error_code.ts";
import {
  encodeMetadataResponse,
  type MetadataPartition,
  type MetadataTopic,
  metadataVersionMax,
  metadataVersionMin,
  readMetadataRequest,
} from "./metadata.ts";
import { apiKey } from "./request_header.ts";

/** Bound on a Metadata response: ten thousand topics with a few partitions each fit. */
export const metadataResponseBytesMax = 64 * 1024 * 1024;

/**
 * Metadata 0 to 8: this broker, and the topics asked for (every topic of the Kafka stream for a
 * null list). A topic that does not exist is created when `auto_create_topics` and the request
 * allow it, with `default_partitions`; otherwise it is answered UNKNOWN_TOPIC_OR_PARTITION, and an
 * invalid name INVALID_TOPIC_EXCEPTION. Every partition is led by this broker; one refused at boot
 * is answered LEADER_NOT_AVAILABLE with no leader, and its replica listed offline.
 */
export const metadataApi: KafkaApi = {
  apiKey: apiKey.metadata,
  name: "metadata",
  minVersion: metadataVersionMin,
  maxVersion: metadataVersionMax,
  async handle(header, body, serving) {
    const request = readMetadataRequest(header.apiVersion, body);
    const topics: MetadataTopic[] = [];
    if (request.topics === null) {
      for (const info of serving.catalog.topics()) topics.push(topicAnswer(info, serving));
    } else {
      for (const name of new Set(request.topics)) {
        topics.push(await namedTopic(name, request.allowAutoTopicCreation, serving));
      }
    }
    const { broker } = serving;
    const bytes = encodeMetadataResponse(header, {
      brokers: [broker],
      clusterId: serving.catalog.clusterId,
      controllerId: broker.nodeId,
      topics,
    }, metadataResponseBytesMax);
    const errorCount = topics.filter((t) => t.errorCode !== kafkaErrorCode.none).length;
    return { pieces: [bytes], errorCount };
  },
};

async function namedTopic(name: string, allowCreate: boolean, serving: KafkaServing): Promise<MetadataTopic> {
  const found = serving.catalog.topic(name);
  if (found !== null) return topicAnswer(found, serving);
  if (!topicNamePattern.test(name)) return topicError(name, kafkaErrorCode.invalidTopicException);
  if (!(allowCreate && serving.autoCreateTopics)) {
    return topicError(name, kafkaErrorCode.unknownTopicOrPartition);
  }
  try {
    return topicAnswer(await serving.catalog.createTopic(name, serving.defaultPartitions), serving);
  } catch (error) {
    if (error instanceof AlreadyExistsError) {
      const raced = serving.catalog.topic(name);
      if (raced !== null) return topicAnswer(raced, serving);
    }
    if (error instanceof InvalidNameError) return topicError(name, kafkaErrorCode.invalidTopicException);
    if (!(error instanceof UnavailableError)) {
      serving.logger.error("Cannot create a topic on first use", {
        topic: name,
        error: error instanceof Error ? error.message : String(error),
      });
    }
    return topicError(name, kafkaErrorCode.leaderNotAvailable);
  }
}

function topicAnswer(info: KafkaTopicInfo, serving: KafkaServing): MetadataTopic {
  const nodeId = serving.broker.nodeId;
  const partitions = info.partitionsOnline.map((online, partitionIndex): MetadataPartition => ({
    errorCode: online ? kafkaErrorCode.none : kafkaErrorCode.leaderNotAvailable,
    partitionIndex,
    leaderId: online ? nodeId : -1,
    leaderEpoch: 0,
    replicaNodes: [nodeId],
    isrNodes: online ? [nodeId] : [],
    offlineReplicas: online ? [] : [nodeId],
  }));
  return { errorCode: kafkaErrorCode.none, name: info.name, isInternal: false, partitions };
}

function topicError(name: string, errorCode: number): MetadataTopic {
  return { errorCode, name, isInternal: false, partitions: [] };
}
