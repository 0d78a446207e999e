import type { KafkaApi, KafkaServing } from "../kafka_api.ts";
import { kafkaErrorCode } from "../kafka_errors.ts";
import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { describeKafkaConfigs } from "../kafka_topic_configs.ts";
import { apiKey, writeResponseHeader } from "../wire/frame_codec.ts";

const topicResourceType = 2;
/** Config sources (v1+): set on the topic, or the server's default. */
const sourceTopic = 1;
const sourceDefault = 5;

interface Resource {
  type: number;
  name: string;
  keys: string[] | null;
}

interface Described {
  errorCode: number;
  message: string | null;
  resource: Resource;
  configs: { name: string; value: string }[];
}

/**
 * DescribeConfigs 0 to 2, for topics: each topic's options by Kafka's config names
 * (`kafka_topic_configs.ts`), all of them or the keys asked for, none read-only or sensitive. Other
 * resource types (brokers) are answered INVALID_REQUEST; an unknown topic UNKNOWN_TOPIC_OR_PARTITION.
 */
export const describeConfigsApi: KafkaApi = {
  apiKey: apiKey.describeConfigs,
  name: "describe_configs",
  minVersion: 0,
  maxVersion: 2,
  handle(header, body, serving) {
    const version = header.apiVersion;
    if (version > 2) throw new KafkaDecodeError(`DescribeConfigs v${version} is not read here`);
    const resources = body.array(readResource, 7);
    if (version >= 1) body.boolean();
    const results = resources.map((r) => describe(r, serving));
    const bytes = results.reduce((n, r) => n + 32 + 3 * r.resource.name.length + r.configs.length * 64, 64);
    const writer = new KafkaWriter(bytes, Math.min(bytes, 4096));
    writeResponseHeader(writer, header);
    writer.int32(0);
    writer.array(results, (w, r) => {
      w.int16(r.errorCode).nullableString(r.message).int8(r.resource.type).nullableString(r.resource.name);
      w.array(r.configs, (cw, c) => {
        cw.nullableString(c.name).nullableString(c.value).boolean(false);
        const isDefault = c.name === "cleanup.policy";
        if (version === 0) cw.boolean(isDefault);
        else cw.int8(isDefault ? sourceDefault : sourceTopic);
        cw.boolean(false);
        if (version >= 1) cw.int32(0); // no synonyms
      });
    });
    return Promise.resolve({
      pieces: [writer.bytes()],
      errorCount: results.filter((r) => r.errorCode !== 0).length,
    });
  },
};

function readResource(r: KafkaReader): Resource {
  return { type: r.int8(), name: r.string(), keys: r.nullableArray((k) => k.string(), 2) };
}

function describe(resource: Resource, serving: KafkaServing): Described {
  const none = { resource, configs: [] };
  if (resource.type !== topicResourceType) {
    return { ...none, errorCode: kafkaErrorCode.invalidRequest, message: "only topics are described" };
  }
  const options = serving.catalog.options(resource.name);
  if (options === null) {
    return {
      ...none,
      errorCode: kafkaErrorCode.unknownTopicOrPartition,
      message: `no topic ${resource.name}`,
    };
  }
  const all = describeKafkaConfigs(options);
  const configs = resource.keys === null || resource.keys.length === 0
    ? all
    : all.filter((c) => resource.keys!.includes(c.name));
  return { errorCode: kafkaErrorCode.none, message: null, resource, configs };
}
