import { InvalidTopicOptionError } from "../../broker/broker_errors.ts";
import {
  checkTopicOption,
  defaultTopicOptions,
  fixedAtCreation,
  type RangedTopicOption,
  type TimestampType,
  timestampTypes,
  type TopicDefaults,
  type TopicOptions,
} from "../../broker/catalog/topic_options.ts";
import { parseBytes, parseDurationMs } from "../../config/units.ts";

/** A request's fields, by their API names. */
type Fields = Record<string, unknown>;

/** Each option's name in the API's requests and answers. */
export const topicOptionFields: Readonly<Record<keyof TopicOptions, string>> = {
  partitions: "partitions",
  segmentSizeBytes: "segment_size",
  segmentMaxAgeMs: "segment_max_age",
  retentionMaxAgeMs: "retention_max_age",
  retentionMaxBytes: "retention_max_bytes",
  tiered: "tiered",
  localRetentionAgeMs: "local_retention_age",
  localRetentionSizeBytes: "local_retention_size",
  retentionConsumerBarrier: "retention_consumer_barrier",
  timestampType: "timestamp_type",
  maxMessageBytes: "max_message_bytes",
  replicationFactor: "replication_factor",
  readReplicaOf: "read_replica_of",
};

/** The options by their API names, as answers show them. */
export function topicOptionsJson(o: TopicOptions): Record<string, unknown> {
  const json: Record<string, unknown> = {};
  for (const [option, field] of Object.entries(topicOptionFields)) {
    json[field] = o[option as keyof TopicOptions];
  }
  const source = o.readReplicaOf;
  json["read_replica_of"] = source === null ? null : {
    cluster_id: source.clusterId,
    stream: source.stream,
    topic: source.topic,
    bucket: source.bucket ?? null,
  };
  return json;
}

/**
 * The options of a create request, its fields given by their API names with sizes and durations
 * as numbers or unit strings; what it leaves out takes the server's defaults. Each bad field is
 * named in the refusal (the broker's ranges, `topic_options.ts`).
 */
export function parseTopicOptions(fields: Fields, defaults: TopicDefaults): TopicOptions {
  const base = defaultTopicOptions(defaults, 1);
  return {
    tiered: boolField(fields, "tiered") ?? base.tiered,
    localRetentionAgeMs: fields["local_retention_age"] === undefined
      ? base.localRetentionAgeMs
      : localRetentionField(fields, "localRetentionAgeMs", defaults),
    localRetentionSizeBytes: fields["local_retention_size"] === undefined
      ? base.localRetentionSizeBytes
      : localRetentionField(fields, "localRetentionSizeBytes", defaults),
    partitions: countField(fields, "partitions", base.partitions),
    segmentSizeBytes: sizeField(fields, "segmentSizeBytes") ?? base.segmentSizeBytes,
    segmentMaxAgeMs: durationField(fields, "segmentMaxAgeMs") ?? base.segmentMaxAgeMs,
    retentionMaxAgeMs: durationField(fields, "retentionMaxAgeMs") ?? base.retentionMaxAgeMs,
    retentionMaxBytes: sizeField(fields, "retentionMaxBytes") ?? base.retentionMaxBytes,
    retentionConsumerBarrier: boolField(fields, "retention_consumer_barrier") ??
      base.retentionConsumerBarrier,
    timestampType: timestampTypeField(fields) ?? base.timestampType,
    maxMessageBytes: sizeField(fields, "maxMessageBytes") ?? base.maxMessageBytes,
    replicationFactor: fields["replication_factor"] === undefined || fields["replication_factor"] === null
      ? base.replicationFactor
      : countField(fields, "replicationFactor", 1),
    readReplicaOf: null,
  };
}

/**
 * The options a PATCH makes of `current`: only the fields present change (a local retention of 0
 * takes the server's default). The options fixed at creation, and the name, are refused. Turning
 * tiering off is for the catalog to refuse while remote segments exist.
 */
export function patchTopicOptions(
  current: TopicOptions,
  fields: Fields,
  defaults: TopicDefaults,
): TopicOptions {
  for (const name of [...fixedAtCreation.map((o) => topicOptionFields[o]), "name"]) {
    if (fields[name] !== undefined) {
      throw new InvalidTopicOptionError(`Cannot update topic: ${name} is fixed at creation`);
    }
  }
  const has = (option: keyof TopicOptions) => fields[topicOptionFields[option]] !== undefined;
  return {
    ...current,
    ...(has("tiered") ? { tiered: patchedBool(fields, "tiered") } : {}),
    ...(has("localRetentionAgeMs")
      ? { localRetentionAgeMs: localRetentionField(fields, "localRetentionAgeMs", defaults) }
      : {}),
    ...(has("localRetentionSizeBytes")
      ? { localRetentionSizeBytes: localRetentionField(fields, "localRetentionSizeBytes", defaults) }
      : {}),
    ...(has("segmentMaxAgeMs") ? { segmentMaxAgeMs: durationField(fields, "segmentMaxAgeMs") } : {}),
    ...(has("retentionMaxAgeMs") ? { retentionMaxAgeMs: durationField(fields, "retentionMaxAgeMs") } : {}),
    ...(has("retentionMaxBytes") ? { retentionMaxBytes: sizeField(fields, "retentionMaxBytes") } : {}),
    ...(has("retentionConsumerBarrier")
      ? { retentionConsumerBarrier: patchedBool(fields, "retention_consumer_barrier") }
      : {}),
    ...(has("timestampType") ? { timestampType: timestampTypeField(fields)! } : {}),
    ...(has("maxMessageBytes")
      ? {
        maxMessageBytes: sizeField(fields, "maxMessageBytes") ??
          defaultTopicOptions(defaults, 1).maxMessageBytes,
      }
      : {}),
  };
}

/** `timestamp_type`, one of "create_time" and "log_append_time"; absent: null. */
function timestampTypeField(fields: Fields): TimestampType | null {
  const value = fields["timestamp_type"];
  if (value === undefined) return null;
  if (typeof value !== "string" || !(timestampTypes as readonly string[]).includes(value)) {
    throw new InvalidTopicOptionError(
      `Cannot use timestamp_type ${JSON.stringify(value)}: expected "create_time" or "log_append_time"`,
    );
  }
  return value as TimestampType;
}

/** A boolean a PATCH sets: null is refused, as any other value that is not true or false. */
function patchedBool(fields: Fields, name: string): boolean {
  const value = boolField(fields, name);
  if (value === null) throw new InvalidTopicOptionError(`Cannot set ${name}: expected true or false`);
  return value;
}

/** true or false; null when absent or null. */
function boolField(fields: Fields, name: string): boolean | null {
  const value = fields[name];
  if (value === undefined || value === null) return null;
  if (typeof value !== "boolean") {
    throw new InvalidTopicOptionError(`Cannot set ${name}: expected true or false`);
  }
  return value;
}

/** An integer in the option's range; `fallback` when absent or null. */
function countField(fields: Fields, option: RangedTopicOption, fallback: number): number {
  const name = topicOptionFields[option];
  const value = fields[name];
  if (value === undefined || value === null) return fallback;
  return checkTopicOption(option, name, typeof value === "number" ? value : null);
}

/** Bytes, as a number or a unit string, in the option's range; null when absent, null or "unlimited". */
function sizeField(fields: Fields, option: RangedTopicOption): number | null {
  const name = topicOptionFields[option];
  const value = fields[name];
  if (value === undefined || value === null || value === "unlimited") return null;
  const bytes = typeof value === "number" || typeof value === "string" ? parseBytes(value) : null;
  return checkTopicOption(option, name, bytes);
}

/**
 * A local retention limit: 0 (or "0 s", "0 B") means the server's default for new topics
 * (`[tiered_storage] default_local_retention_age` or `_size`), "unlimited" or null no limit, and
 * anything else a value in the option's range.
 */
function localRetentionField(
  fields: Fields,
  option: "localRetentionAgeMs" | "localRetentionSizeBytes",
  defaults: TopicDefaults,
): number | null {
  const value = fields[topicOptionFields[option]];
  const kind = option === "localRetentionAgeMs" ? "duration" : "size";
  const parsed = typeof value === "number" || typeof value === "string"
    ? (kind === "duration" ? parseDurationMs(value) : parseBytes(value))
    : null;
  if (parsed === 0) return defaults[option];
  return kind === "duration" ? durationField(fields, option) : sizeField(fields, option);
}

/** Milliseconds, as a number or a unit string, in the option's range; null when absent, null or "unlimited". */
function durationField(fields: Fields, option: RangedTopicOption): number | null {
  const name = topicOptionFields[option];
  const value = fields[name];
  if (value === undefined || value === null || value === "unlimited") return null;
  const ms = typeof value === "number" || typeof value === "string" ? parseDurationMs(value) : null;
  return checkTopicOption(option, name, ms);
}
