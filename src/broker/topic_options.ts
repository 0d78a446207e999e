import type { TieredStorageConfig } from "../config/config.ts";
import { parseBytes, parseDurationMs } from "../config/units.ts";
import { InvalidTopicOptionError } from "./broker_errors.ts";

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
}

/** Server defaults for the options a create request leaves out. */
export interface TopicDefaults {
  tiered: boolean;
  localRetentionAgeMs: number | null;
  localRetentionSizeBytes: number | null;
}

export const partitionsPerTopicMax = 1024;
export const segmentSizeBytesMin = 1024 * 1024;
export const segmentSizeBytesMax = 2 * 1024 * 1024 * 1024;
export const segmentSizeBytesDefault = 1024 * 1024 * 1024;
export const segmentMaxAgeMsMin = 1000;

/** The defaults of a server with these tiered storage settings. */
export function topicDefaultsOf(t: TieredStorageConfig): TopicDefaults {
  return {
    tiered: t.enabled && t.defaultTopicTiered,
    localRetentionAgeMs: t.defaultLocalRetentionAgeMs,
    localRetentionSizeBytes: t.defaultLocalRetentionSizeBytes,
  };
}

/**
 * Validates the options of a create request, given by their API names (`segment_size`,
 * `retention_max_age`, ...) with sizes and durations as numbers or unit strings; each bad field is
 * named in the refusal.
 */
export function parseTopicOptions(fields: Record<string, unknown>, defaults: TopicDefaults): TopicOptions {
  return {
    tiered: boolField(fields, "tiered") ?? defaults.tiered,
    localRetentionAgeMs: fields["local_retention_age"] === undefined
      ? defaults.localRetentionAgeMs
      : durationField(fields, "local_retention_age", 1000),
    localRetentionSizeBytes: fields["local_retention_size"] === undefined
      ? defaults.localRetentionSizeBytes
      : bytesField(fields, "local_retention_size", null, 1024 * 1024, Number.MAX_SAFE_INTEGER),
    partitions: intField(fields, "partitions", 1, 1, partitionsPerTopicMax),
    segmentSizeBytes:
      bytesField(fields, "segment_size", segmentSizeBytesDefault, segmentSizeBytesMin, segmentSizeBytesMax) ??
        segmentSizeBytesDefault,
    segmentMaxAgeMs: durationField(fields, "segment_max_age", segmentMaxAgeMsMin),
    retentionMaxAgeMs: durationField(fields, "retention_max_age", 1),
    retentionMaxBytes: bytesField(fields, "retention_max_bytes", null, 1, Number.MAX_SAFE_INTEGER),
    retentionConsumerBarrier: boolField(fields, "retention_consumer_barrier") ?? true,
  };
}

/** Options stored before a field existed read as that field's default. */
export function withOptionDefaults(stored: TopicOptions): TopicOptions {
  return { ...stored, retentionConsumerBarrier: stored.retentionConsumerBarrier ?? true };
}

/**
 * A PATCH: only the fields present change. Partitions and segment size are fixed at creation.
 * Turning tiering off is for the caller to refuse while remote segments exist.
 */
export function patchTopicOptions(current: TopicOptions, fields: Record<string, unknown>): TopicOptions {
  for (const name of ["partitions", "segment_size", "name"]) {
    if (fields[name] !== undefined) {
      throw new InvalidTopicOptionError(`Cannot update topic: ${name} is fixed at creation`);
    }
  }
  const has = (name: string) => fields[name] !== undefined;
  return {
    ...current,
    ...(has("tiered") ? { tiered: boolField(fields, "tiered")! } : {}),
    ...(has("local_retention_age")
      ? { localRetentionAgeMs: durationField(fields, "local_retention_age", 1000) }
      : {}),
    ...(has("local_retention_size")
      ? {
        localRetentionSizeBytes: bytesField(
          fields,
          "local_retention_size",
          null,
          1024 * 1024,
          Number.MAX_SAFE_INTEGER,
        ),
      }
      : {}),
    ...(has("segment_max_age")
      ? { segmentMaxAgeMs: durationField(fields, "segment_max_age", segmentMaxAgeMsMin) }
      : {}),
    ...(has("retention_max_age") ? { retentionMaxAgeMs: durationField(fields, "retention_max_age", 1) } : {}),
    ...(has("retention_max_bytes")
      ? { retentionMaxBytes: bytesField(fields, "retention_max_bytes", null, 1, Number.MAX_SAFE_INTEGER) }
      : {}),
    ...(has("retention_consumer_barrier")
      ? { retentionConsumerBarrier: boolField(fields, "retention_consumer_barrier")! }
      : {}),
  };
}

function boolField(fields: Record<string, unknown>, name: string): boolean | null {
  const value = fields[name];
  if (value === undefined || value === null) return null;
  if (typeof value !== "boolean") {
    throw new InvalidTopicOptionError(`Cannot set ${name}: expected true or false`);
  }
  return value;
}

function intField(
  fields: Record<string, unknown>,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const value = fields[name];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidTopicOptionError(
      `Cannot create topic: ${name} must be an integer from ${min} to ${max}`,
    );
  }
  return value;
}

function bytesField(
  fields: Record<string, unknown>,
  name: string,
  fallback: number | null,
  min: number,
  max: number,
): number | null {
  const value = fields[name];
  if (value === undefined || value === null || value === "unlimited") return fallback;
  const bytes = typeof value === "number" || typeof value === "string" ? parseBytes(value) : null;
  if (bytes === null || bytes < min || bytes > max) {
    throw new InvalidTopicOptionError(
      `Cannot create topic: ${name} must be a size from ${min} to ${max} bytes`,
    );
  }
  return bytes;
}

function durationField(fields: Record<string, unknown>, name: string, minMs: number): number | null {
  const value = fields[name];
  if (value === undefined || value === null || value === "unlimited") return null;
  const ms = typeof value === "number" || typeof value === "string" ? parseDurationMs(value) : null;
  if (ms === null || ms < minMs) {
    throw new InvalidTopicOptionError(
      `Cannot create topic: ${name} must be a duration of at least ${minMs} ms`,
    );
  }
  return ms;
}
