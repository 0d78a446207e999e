import { AlreadyExistsError, InvalidNameError, UnavailableError } from "../../broker/broker_errors.ts";
import { topicNamePattern } from "../../broker/catalog/names.ts";
import { offsetsTopicName } from "../../groups/offsets/offsets_log.ts";
import type { KafkaApi, KafkaClusterServing, KafkaServing } from "../kafka_api.ts";
import { noLeader } from "../../cluster/controller/partition_state.ts";
import type { KafkaTopicInfo } from "../kafka_catalog.ts";
import { kafkaErrorCode } from "../kafka_errors.ts";
import {
  encodeMetadataResponse,
  type MetadataPartition,
  type MetadataTopic,
  metadataVersionMax,
  metadataVersionMin,
  readMetadataRequest,
} from "./metadata_codec.ts";
import { apiKey } from "../wire/frame_codec.ts";

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
    const { broker, cluster } = serving;
    const bytes = encodeMetadataResponse(header, {
      brokers: cluster === null ? [broker] : cluster.brokers(),
      clusterId: serving.catalog.clusterId,
      controllerId: cluster === null ? broker.nodeId : cluster.controllerId(),
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
  if (!(allowCreate && serving.autoCreateTopics) || name === offsetsTopicName) {
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
        error,
      });
    }
    return topicError(name, kafkaErrorCode.leaderNotAvailable);
  }
}

function topicAnswer(info: KafkaTopicInfo, serving: KafkaServing): MetadataTopic {
  if (serving.cluster !== null) return clusterTopicAnswer(info, serving.cluster, serving);
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
  return {
    errorCode: kafkaErrorCode.none,
    name: info.name,
    isInternal: info.name === offsetsTopicName,
    partitions,
  };
}

/**
 * A topic's partitions as the cluster's state has them: each one's leader and epoch, replicas and
 * in-sync set, replicas on nodes that are not live as offline; a partition with no leader (or no
 * state yet: its topic was just created) is LEADER_NOT_AVAILABLE.
 */
function clusterTopicAnswer(
  info: KafkaTopicInfo,
  cluster: KafkaClusterServing,
  serving: KafkaServing,
): MetadataTopic {
  const live = new Set(cluster.brokers().map((b) => b.nodeId));
  const partitions = info.partitionsOnline.map((_, partitionIndex): MetadataPartition => {
    const address = serving.catalog.partitionAddress(info.name, partitionIndex);
    const state = address === null ? null : cluster.partitionState(address);
    if (state === null) {
      return {
        errorCode: kafkaErrorCode.leaderNotAvailable,
        partitionIndex,
        leaderId: -1,
        leaderEpoch: -1,
        replicaNodes: [],
        isrNodes: [],
        offlineReplicas: [],
      };
    }
    const led = state.leader !== noLeader && live.has(state.leader);
    return {
      errorCode: led ? kafkaErrorCode.none : kafkaErrorCode.leaderNotAvailable,
      partitionIndex,
      leaderId: led ? state.leader : -1,
      leaderEpoch: state.leaderEpoch,
      replicaNodes: state.replicas,
      isrNodes: state.isr,
      offlineReplicas: state.replicas.filter((id) => !live.has(id)),
    };
  });
  return {
    errorCode: kafkaErrorCode.none,
    name: info.name,
    isInternal: info.name === offsetsTopicName,
    partitions,
  };
}

function topicError(name: string, errorCode: number): MetadataTopic {
  return { errorCode, name, isInternal: false, partitions: [] };
}
