import {
  AlreadyExistsError,
  InvalidNameError,
  InvalidReplicationFactorError,
  InvalidTopicOptionError,
} from "../../broker/broker_errors.ts";
import { defaultTopicOptions, partitionsPerTopicMax } from "../../broker/catalog/topic_options.ts";
import { offsetsTopicName } from "../../groups/offsets/offsets_log.ts";
import type { KafkaApi, KafkaServing } from "../kafka_api.ts";
import { kafkaErrorCode, kafkaErrorOf } from "../kafka_errors.ts";
import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { applyKafkaConfigs, InvalidConfigError } from "../kafka_topic_configs.ts";
import { apiKey, writeResponseHeader } from "../wire/frame_codec.ts";

interface TopicRequest {
  name: string;
  partitions: number;
  replicationFactor: number;
  assignments: number;
  configs: { name: string; value: string | null }[];
}

/**
 * CreateTopics 2 to 4: each topic with its partition count (-1: `default_partitions`), a
 * replication factor of 1 or -1 (one node), no manual assignment, and Kafka's config names
 * (`kafka_topic_configs.ts`); `validate_only` checks without creating. Each topic is answered with
 * its own error: TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION, INVALID_PARTITIONS,
 * INVALID_REPLICATION_FACTOR, INVALID_REQUEST or INVALID_CONFIG, with a message.
 */
export const createTopicsApi: KafkaApi = {
  apiKey: apiKey.createTopics,
  name: "create_topics",
  minVersion: 2,
  maxVersion: 4,
  async handle(header, body, serving) {
    if (header.apiVersion < 2 || header.apiVersion > 4) {
      throw new KafkaDecodeError(`CreateTopics v${header.apiVersion} is not read here`);
    }
    const topics = body.array(readTopic, 12);
    body.int32(); // timeout: creation is one metadata commit, never long
    const validateOnly = body.boolean();
    const results: { name: string; errorCode: number; message: string | null }[] = [];
    for (const topic of topics) {
      results.push({ name: topic.name, ...(await createOne(topic, validateOnly, serving)) });
    }
    const writer = new KafkaWriter(
      64 + results.reduce((n, r) => n + 16 + 3 * (r.name.length + (r.message?.length ?? 0)), 0),
    );
    writeResponseHeader(writer, header);
    writer.int32(0);
    writer.array(results, (w, r) => w.nullableString(r.name).int16(r.errorCode).nullableString(r.message));
    return { pieces: [writer.bytes()], errorCount: results.filter((r) => r.errorCode !== 0).length };
  },
};

function readTopic(r: KafkaReader): TopicRequest {
  const name = r.string();
  const partitions = r.int32();
  const replicationFactor = r.int16();
  const assignments = r.array((a) => [a.int32(), a.array((b) => b.int32(), 4)], 8).length;
  const configs = r.array((c) => ({ name: c.string(), value: c.nullableString() }), 4);
  return { name, partitions, replicationFactor, assignments, configs };
}

async function createOne(
  topic: TopicRequest,
  validateOnly: boolean,
  serving: KafkaServing,
): Promise<{ errorCode: number; message: string | null }> {
  const refuse = (errorCode: number, message: string) => ({ errorCode, message });
  if (topic.name === offsetsTopicName) {
    return refuse(
      kafkaErrorCode.invalidTopicException,
      `${offsetsTopicName} is created by the group coordinator`,
    );
  }
  if (serving.cluster === null && topic.replicationFactor !== -1 && topic.replicationFactor !== 1) {
    return refuse(
      kafkaErrorCode.invalidReplicationFactor,
      "one node holds one replica: replication factor 1 or -1",
    );
  }
  if (topic.replicationFactor === 0 || topic.replicationFactor < -1) {
    return refuse(kafkaErrorCode.invalidReplicationFactor, `replication factor ${topic.replicationFactor}`);
  }
  if (topic.assignments > 0) {
    return refuse(kafkaErrorCode.invalidRequest, "manual replica assignments are not served");
  }
  const partitions = topic.partitions === -1 ? serving.defaultPartitions : topic.partitions;
  if (!(partitions >= 1 && partitions <= partitionsPerTopicMax)) {
    return refuse(
      kafkaErrorCode.invalidPartitions,
      `partitions must be 1 to ${partitionsPerTopicMax}, got ${topic.partitions}`,
    );
  }
  if (serving.catalog.has(topic.name)) {
    return refuse(kafkaErrorCode.topicAlreadyExists, `topic ${topic.name} exists`);
  }
  try {
    const defaults = serving.catalog.topicDefaults;
    const replicationFactor = serving.cluster === null || topic.replicationFactor === -1
      ? null
      : topic.replicationFactor;
    const base = { ...defaultTopicOptions(defaults, partitions), replicationFactor };
    const options = applyKafkaConfigs(base, topic.configs, defaults);
    if (!validateOnly) await serving.catalog.createTopicWith(topic.name, options);
    return { errorCode: kafkaErrorCode.none, message: null };
  } catch (error) {
    if (error instanceof InvalidReplicationFactorError) {
      return refuse(kafkaErrorCode.invalidReplicationFactor, error.message);
    }
    if (error instanceof InvalidConfigError || error instanceof InvalidTopicOptionError) {
      return refuse(kafkaErrorCode.invalidConfig, error.message);
    }
    if (error instanceof InvalidNameError) return refuse(kafkaErrorCode.invalidTopicException, error.message);
    if (error instanceof AlreadyExistsError) return refuse(kafkaErrorCode.topicAlreadyExists, error.message);
    return refuse(
      kafkaErrorOf(error, serving.logger, `create topic ${topic.name}`),
      "the topic could not be created",
    );
  }
}
