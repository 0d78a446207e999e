import { parseBytes, parseDurationMs } from "../config/units.ts";
import { badRequest } from "./api_errors.ts";

/** A topic's options; sizes in bytes and durations in milliseconds; null means unlimited or unset. */
export interface TopicOptions {
  partitions: number;
  segmentSizeBytes: number;
  segmentMaxAgeMs: number | null;
  retentionMaxAgeMs: number | null;
  retentionMaxBytes: number | null;
}

export const partitionsPerTopicMax = 1024;
export const segmentSizeBytesMin = 1024 * 1024;
export const segmentSizeBytesMax = 2 * 1024 * 1024 * 1024;
export const segmentSizeBytesDefault = 1024 * 1024 * 1024;
export const segmentMaxAgeMsMin = 1000;

/** Validates the options of a create request; each bad field is named in the 400. */
export function parseTopicOptions(body: Record<string, unknown>): TopicOptions {
  return {
    partitions: intField(body, "partitions", 1, 1, partitionsPerTopicMax),
    segmentSizeBytes:
      bytesField(body, "segment_size", segmentSizeBytesDefault, segmentSizeBytesMin, segmentSizeBytesMax) ??
        segmentSizeBytesDefault,
    segmentMaxAgeMs: durationField(body, "segment_max_age", segmentMaxAgeMsMin),
    retentionMaxAgeMs: durationField(body, "retention_max_age", 1),
    retentionMaxBytes: bytesField(body, "retention_max_bytes", null, 1, Number.MAX_SAFE_INTEGER),
  };
}

/** The options as the API shows them. */
export function topicOptionsJson(o: TopicOptions): Record<string, unknown> {
  return {
    partitions: o.partitions,
    segment_size: o.segmentSizeBytes,
    segment_max_age: o.segmentMaxAgeMs,
    retention_max_age: o.retentionMaxAgeMs,
    retention_max_bytes: o.retentionMaxBytes,
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
