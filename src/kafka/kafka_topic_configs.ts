import { InvalidTopicOptionError } from "../broker/broker_errors.ts";
import {
  checkTopicOption,
  type RangedTopicOption,
  type TopicDefaults,
  type TopicOptions,
} from "../broker/catalog/topic_options.ts";

/**
 * Kafka's topic config names for Strata's topic options (KIP-405's for tiering), both ways: a
 * CreateTopics request's configs become options, and DescribeConfigs answers options by these
 * names. -1 is Kafka's "unlimited"; for `local.retention.*`, -2 is "the server's default" here (in
 * Kafka, "as `retention.*`"). A name not in the table is refused.
 */

type Mapped = RangedTopicOption | "tiered" | "timestampType" | "cleanupPolicy";

/** Each config name with the option it sets. */
export const kafkaTopicConfigs: Readonly<Record<string, Mapped>> = {
  "retention.ms": "retentionMaxAgeMs",
  "retention.bytes": "retentionMaxBytes",
  "segment.bytes": "segmentSizeBytes",
  "segment.ms": "segmentMaxAgeMs",
  "message.timestamp.type": "timestampType",
  "remote.storage.enable": "tiered",
  "local.retention.ms": "localRetentionAgeMs",
  "local.retention.bytes": "localRetentionSizeBytes",
  "cleanup.policy": "cleanupPolicy",
  "max.message.bytes": "maxMessageBytes",
};

/** A config Kafka names that cannot be applied: INVALID_CONFIG. */
export class InvalidConfigError extends Error {
  override name = "InvalidConfigError";
}

/** The options `configs` make of `base` (the server's defaults); throws InvalidConfigError. */
export function applyKafkaConfigs(
  base: TopicOptions,
  configs: readonly { name: string; value: string | null }[],
  defaults: TopicDefaults,
): TopicOptions {
  const options = { ...base };
  for (const { name, value } of configs) {
    const mapped = kafkaTopicConfigs[name];
    if (mapped === undefined) {
      throw new InvalidConfigError(`Cannot apply config ${name}: it is not one Strata has`);
    }
    if (value === null) continue;
    try {
      applyOne(options, mapped, name, value, defaults);
    } catch (error) {
      if (error instanceof InvalidTopicOptionError) {
        throw new InvalidConfigError(error.message, { cause: error });
      }
      throw error;
    }
  }
  return options;
}

function applyOne(
  options: TopicOptions,
  mapped: Mapped,
  name: string,
  value: string,
  defaults: TopicDefaults,
): void {
  if (mapped === "cleanupPolicy") {
    if (value !== "delete") {
      throw new InvalidConfigError(`Cannot apply ${name}=${value}: only "delete" is served`);
    }
    return;
  }
  if (mapped === "tiered") {
    if (value !== "true" && value !== "false") {
      throw new InvalidConfigError(`Cannot apply ${name}=${value}: expected true or false`);
    }
    options.tiered = value === "true";
    return;
  }
  if (mapped === "timestampType") {
    if (value !== "CreateTime" && value !== "LogAppendTime") {
      throw new InvalidConfigError(`Cannot apply ${name}=${value}: expected CreateTime or LogAppendTime`);
    }
    options.timestampType = value === "CreateTime" ? "create_time" : "log_append_time";
    return;
  }
  const number = /^-?\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(number)) {
    throw new InvalidConfigError(`Cannot apply ${name}=${value}: expected an integer`);
  }
  const local = mapped === "localRetentionAgeMs" || mapped === "localRetentionSizeBytes";
  if (local && number === -2) {
    options[mapped] = mapped === "localRetentionAgeMs"
      ? defaults.localRetentionAgeMs
      : defaults.localRetentionSizeBytes;
    return;
  }
  const ranged = options as unknown as Record<RangedTopicOption, number | null>;
  const nullable = mapped !== "segmentSizeBytes" && mapped !== "partitions" && mapped !== "maxMessageBytes";
  ranged[mapped] = number === -1 && nullable ? null : checkTopicOption(mapped, name, number);
}

/** A topic's options by Kafka's config names, as DescribeConfigs answers them (-1: unlimited). */
export function describeKafkaConfigs(options: TopicOptions): { name: string; value: string }[] {
  const n = (v: number | null) => String(v ?? -1);
  return [
    { name: "cleanup.policy", value: "delete" },
    { name: "retention.ms", value: n(options.retentionMaxAgeMs) },
    { name: "retention.bytes", value: n(options.retentionMaxBytes) },
    { name: "segment.bytes", value: n(options.segmentSizeBytes) },
    { name: "segment.ms", value: n(options.segmentMaxAgeMs) },
    {
      name: "message.timestamp.type",
      value: options.timestampType === "create_time" ? "CreateTime" : "LogAppendTime",
    },
    { name: "remote.storage.enable", value: String(options.tiered) },
    { name: "local.retention.ms", value: n(options.localRetentionAgeMs) },
    { name: "local.retention.bytes", value: n(options.localRetentionSizeBytes) },
    { name: "max.message.bytes", value: n(options.maxMessageBytes) },
  ];
}
