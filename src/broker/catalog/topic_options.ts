import type { TieredStorageConfig } from "../../config/config.ts";
import { InvalidTopicOptionError } from "../broker_errors.ts";

/** A topic's options; sizes in bytes and durations in milliseconds; null means unlimited or unset. */
export interface TopicOptions {
  partitions: number;
  segmentSizeBytes: number;
  segmentMaxAgeMs: number | null;
  retentionMaxAgeMs: number | null;
  retentionMaxBytes: number | null;
  /** Sealed segments are uploaded to the object store. */
  tiered: boolean;
  /** Local envelope: uploaded local copies older than this are evicted; null keeps them. */
  localRetentionAgeMs: number | null;
  /** Local envelope per partition: uploaded local bytes above this are evicted; null keeps them. */
  localRetentionSizeBytes: number | null;
  /**
   * On tiered topics, total retention keeps every segment a stored consumer offset points into or
   * before (the consumer barrier); false lets retention delete regardless of consumers.
   */
  retentionConsumerBarrier: boolean;
  /** "create_time": the producer's timestamps; "log_append_time": the server's at the append. */
  timestampType: TimestampType;
  /** The largest record batch a Kafka producer may send (Kafka's `max.message.bytes`). */
  maxMessageBytes: number;
  /** Replicas of each partition in a cluster; null: `[cluster] replication_factor`. Fixed at creation. */
  replicationFactor: number | null;
  /**
   * A read-replica topic's source in the bucket (docs/DESIGN.md, "Read replicas"): it serves that
   * topic's uploaded data read-only; null for a topic of its own. Fixed at creation.
   */
  readReplicaOf: ReadReplicaSource | null;
}

/** The topic a read replica follows: its cluster in the bucket and its names there. */
export interface ReadReplicaSource {
  clusterId: string;
  stream: string;
  topic: string;
  /** Another bucket of the same object store service; null: the server's own. */
  bucket: string | null;
}

export type TimestampType = "create_time" | "log_append_time";
export const timestampTypes: readonly TimestampType[] = ["create_time", "log_append_time"];

/** Server defaults for the options a create request leaves out. */
export interface TopicDefaults {
  tiered: boolean;
  localRetentionAgeMs: number | null;
  localRetentionSizeBytes: number | null;
}

export const partitionsPerTopicMax = 1024;
/**
 * The smallest segment: Kafka 3's floor for `segment.bytes` (a v0 record's overhead). A segment rolls
 * once it holds this many bytes, so one this small holds a single batch; clients' tests use such
 * segments to put each transaction or compaction step in a segment of its own.
 */
export const segmentSizeBytesMin = 14;
export const segmentSizeBytesMax = 2 * 1024 * 1024 * 1024;
export const segmentSizeBytesDefault = 1024 * 1024 * 1024;
export const segmentMaxAgeMsMin = 1000;
export const localRetentionAgeMsMin = 1000;
export const localRetentionSizeBytesMin = 1024 * 1024;
/** Kafka's default `max.message.bytes`: 1 MiB and a batch's 12-byte log overhead. */
export const maxMessageBytesDefault = 1024 * 1024 + 12;
export const maxMessageBytesMin = 1024;
/** At most what a Kafka frame may carry (`[kafka] max_frame_bytes` at its largest). */
export const maxMessageBytesMax = 1024 * 1024 * 1024;

/** The options of a new topic of `partitions` partitions that sets nothing else: the server's defaults. */
export function defaultTopicOptions(defaults: TopicDefaults, partitions: number): TopicOptions {
  return {
    partitions,
    segmentSizeBytes: segmentSizeBytesDefault,
    segmentMaxAgeMs: null,
    retentionMaxAgeMs: null,
    retentionMaxBytes: null,
    tiered: defaults.tiered,
    localRetentionAgeMs: defaults.localRetentionAgeMs,
    localRetentionSizeBytes: defaults.localRetentionSizeBytes,
    retentionConsumerBarrier: true,
    timestampType: "create_time",
    maxMessageBytes: maxMessageBytesDefault,
    replicationFactor: null,
    readReplicaOf: null,
  };
}

/** The options a topic keeps from its creation on: a change to them is refused. */
export const fixedAtCreation: readonly (keyof TopicOptions)[] = [
  "partitions",
  "segmentSizeBytes",
  "replicationFactor",
  "readReplicaOf",
];

/** The most replicas a partition may have. */
export const replicationFactorMax = 16;

/** The options whose values are numbers within a range. */
export type RangedTopicOption =
  | "partitions"
  | "segmentSizeBytes"
  | "segmentMaxAgeMs"
  | "retentionMaxAgeMs"
  | "retentionMaxBytes"
  | "localRetentionAgeMs"
  | "localRetentionSizeBytes"
  | "maxMessageBytes"
  | "replicationFactor";

/** A ranged option's kind (an integer count, a size in bytes, a duration in ms) and its bounds. */
export interface OptionRange {
  kind: "count" | "size" | "duration";
  min: number;
  max: number;
}

/** The range of each ranged option; durations have no upper bound. */
export const topicOptionRanges: Readonly<Record<RangedTopicOption, OptionRange>> = {
  partitions: { kind: "count", min: 1, max: partitionsPerTopicMax },
  segmentSizeBytes: { kind: "size", min: segmentSizeBytesMin, max: segmentSizeBytesMax },
  segmentMaxAgeMs: { kind: "duration", min: segmentMaxAgeMsMin, max: Infinity },
  retentionMaxAgeMs: { kind: "duration", min: 1, max: Infinity },
  retentionMaxBytes: { kind: "size", min: 1, max: Number.MAX_SAFE_INTEGER },
  localRetentionAgeMs: { kind: "duration", min: localRetentionAgeMsMin, max: Infinity },
  localRetentionSizeBytes: { kind: "size", min: localRetentionSizeBytesMin, max: Number.MAX_SAFE_INTEGER },
  maxMessageBytes: { kind: "size", min: maxMessageBytesMin, max: maxMessageBytesMax },
  replicationFactor: { kind: "count", min: 1, max: replicationFactorMax },
};

/**
 * The option's value when it is a number of its kind within its range; otherwise (and when
 * `value` is null: the request's value was not one of that kind) a refusal that names the option
 * by `field`, as the request named it, and states the range.
 */
export function checkTopicOption(option: RangedTopicOption, field: string, value: number | null): number {
  const { kind, min, max } = topicOptionRanges[option];
  const valid = value !== null && value >= min && value <= max &&
    (kind !== "count" || Number.isInteger(value));
  if (valid) return value;
  const expected = kind === "count"
    ? `an integer from ${min} to ${max}`
    : kind === "size"
    ? `a size from ${min} to ${max} bytes`
    : `a duration of at least ${min} ms`;
  throw new InvalidTopicOptionError(`Cannot create topic: ${field} must be ${expected}`);
}

/** The defaults of a server with these tiered storage settings. */
export function topicDefaultsOf(t: TieredStorageConfig): TopicDefaults {
  return {
    tiered: t.enabled && t.defaultTopicTiered,
    localRetentionAgeMs: t.defaultLocalRetentionAgeMs,
    localRetentionSizeBytes: t.defaultLocalRetentionSizeBytes,
  };
}

/** Options stored before a field existed read as that field's default. */
export function withOptionDefaults(stored: TopicOptions): TopicOptions {
  return {
    ...stored,
    retentionConsumerBarrier: stored.retentionConsumerBarrier ?? true,
    timestampType: stored.timestampType ?? "create_time",
    maxMessageBytes: stored.maxMessageBytes ?? maxMessageBytesDefault,
    replicationFactor: stored.replicationFactor ?? null,
    readReplicaOf: stored.readReplicaOf ?? null,
  };
}
