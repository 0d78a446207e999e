import { parseBytes, parseDurationMs } from "../config/units.ts";
import { badRequest } from "./api_errors.ts";

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

/** Validates the options of a create request; each bad field is named in the 400. */
export function parseTopicOptions(body: Record<string, unknown>, defaults: TopicDefaults): TopicOptions {
  return {
    tiered: boolField(body, "tiered") ?? defaults.tiered,
    localRetentionAgeMs: body["local_retention_age"] === undefined
      ? defaults.localRetentionAgeMs
      : durationField(body, "local_retention_age", 1000),
    localRetentionSizeBytes: body["local_retention_size"] === undefined
      ? defaults.localRetentionSizeBytes
      : bytesField(body, "local_retention_size", null, 1024 * 1024, Number.MAX_SAFE_INTEGER),
    partitions: intField(body, "partitions", 1, 1, partitionsPerTopicMax),
    segmentSizeBytes:
      bytesField(body, "segment_size", segmentSizeBytesDefault, segmentSizeBytesMin, segmentSizeBytesMax) ??
        segmentSizeBytesDefault,
    segmentMaxAgeMs: durationField(body, "segment_max_age", segmentMaxAgeMsMin),
    retentionMaxAgeMs: durationField(body, "retention_max_age", 1),
    retentionMaxBytes: bytesField(body, "retention_max_bytes", null, 1, Number.MAX_SAFE_INTEGER),
    retentionConsumerBarrier: boolField(body, "retention_consumer_barrier") ?? true,
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
export function patchTopicOptions(current: TopicOptions, body: Record<string, unknown>): TopicOptions {
  for (const name of ["partitions", "segment_size", "name"]) {
    if (body[name] !== undefined) {
      throw badRequest("invalid_option", `Cannot update topic: ${name} is fixed at creation`);
    }
  }
  const has = (name: string) => body[name] !== undefined;
  return {
    ...current,
    ...(has("tiered") ? { tiered: boolField(body, "tiered")! } : {}),
    ...(has("local_retention_age")
      ? { localRetentionAgeMs: durationField(body, "local_retention_age", 1000) }
      : {}),
    ...(has("local_retention_size")
      ? {
        localRetentionSizeBytes: bytesField(
          body,
          "local_retention_size",
          null,
          1024 * 1024,
          Number.MAX_SAFE_INTEGER,
        ),
      }
      : {}),
    ...(has("segment_max_age")
      ? { segmentMaxAgeMs: durationField(body, "segment_max_age", segmentMaxAgeMsMin) }
      : {}),
    ...(has("retention_max_age") ? { retentionMaxAgeMs: durationField(body, "retention_max_age", 1) } : {}),
    ...(has("retention_max_bytes")
      ? { retentionMaxBytes: bytesField(body, "retention_max_bytes", null, 1, Number.MAX_SAFE_INTEGER) }
      : {}),
    ...(has("retention_consumer_barrier")
      ? { retentionConsumerBarrier: boolField(body, "retention_consumer_barrier")! }
      : {}),
  };
}

function boolField(body: Record<string, unknown>, name: string): boolean | null {
  const value = body[name];
  if (value === undefined || value === null) return null;
  if (typeof value !== "boolean") {
    throw badRequest("invalid_option", `Cannot set ${name}: expected true or false`);
  }
  return value;
}

/** The options as the API shows them. */
export function topicOptionsJson(o: TopicOptions): Record<string, unknown> {
  return {
    partitions: o.partitions,
    segment_size: o.segmentSizeBytes,
    segment_max_age: o.segmentMaxAgeMs,
    retention_max_age: o.retentionMaxAgeMs,
    retention_max_bytes: o.retentionMaxBytes,
    tiered: o.tiered,
    local_retention_age: o.localRetentionAgeMs,
    local_retention_size: o.localRetentionSizeBytes,
    retention_consumer_barrier: o.retentionConsumerBarrier,
  };
}

function intField(
  body: Record<string, unknown>,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const value = body[name];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw badRequest(
      "invalid_option",
      `Cannot create topic: ${name} must be an integer from ${min} to ${max}`,
    );
  }
  return value;
}

function bytesField(
  body: Record<string, unknown>,
  name: string,
  fallback: number | null,
  min: number,
  max: number,
): number | null {
  const value = body[name];
  if (value === undefined || value === null || value === "unlimited") return fallback;
  const bytes = typeof value === "number" || typeof value === "string" ? parseBytes(value) : null;
  if (bytes === null || bytes < min || bytes > max) {
    throw badRequest(
      "invalid_option",
      `Cannot create topic: ${name} must be a size from ${min} to ${max} bytes`,
    );
  }
  return bytes;
}

function durationField(body: Record<string, unknown>, name: string, minMs: number): number | null {
  const value = body[name];
  if (value === undefined || value === null || value === "unlimited") return null;
  const ms = typeof value === "number" || typeof value === "string" ? parseDurationMs(value) : null;
  if (ms === null || ms < minMs) {
    throw badRequest(
      "invalid_option",
      `Cannot create topic: ${name} must be a duration of at least ${minMs} ms`,
    );
  }
  return ms;
}
