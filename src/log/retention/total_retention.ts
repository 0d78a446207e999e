import { assert } from "../../runtime/assert.ts";
import type { SegmentLocation } from "../segment/segment.ts";

/**
 * What the retention decisions, local (`local_retention.ts`) and total (below), look at in a
 * segment. A `Segment` is one.
 */
export interface RetentionSegment {
  readonly startOffset: number;
  readonly endOffset: number;
  readonly sizeBytes: number;
  /** Timestamp of the newest message in the segment (wall clock, microseconds). */
  readonly maxTimestampUs: number;
  readonly sealed: boolean;
  readonly location: SegmentLocation;
}

/**
 * Asserts the order the retention decisions rely on: oldest first, each segment starting right after
 * the one before it ends (boot refuses a chain with a hole, `recover_segments.ts`), none of negative
 * size or length. One pass over the segments: a decision's cost, made once per pass, never per message.
 */
export function assertChainOrder(segments: readonly RetentionSegment[]): void {
  let expectedStart = segments[0]?.startOffset ?? 0;
  for (const segment of segments) {
    if (segment.startOffset !== expectedStart) {
      assert(
        false,
        `segments are contiguous: ${segment.startOffset} follows a segment ending at ${expectedStart - 1}`,
      );
    }
    if (segment.startOffset < 0 || segment.sizeBytes < 0 || segment.endOffset < segment.startOffset - 1) {
      assert(
        false,
        `segment ${segment.startOffset} has its bounds and size (ends at ${segment.endOffset}, ${segment.sizeBytes} bytes)`,
      );
    }
    expectedStart = segment.endOffset + 1;
  }
}

/**
 * Total retention's decisions, as pure functions: which front segments of a partition one pass
 * deletes, local or remote alike. The log's writer loop runs the deletion (`segment_deletion.ts`);
 * the broker supplies the topic's limits. No I/O, no clock: the wall time is an argument.
 */

/** Segments deleted by one retention pass at most: a pass holds the writer loop for a bounded time. */
export const retentionSegmentsPerPassMax = 16;

/** Decides, for the oldest sealed segment, whether total retention removes it. */
export type RetentionDecision = (segment: RetentionSegment, retainedBytes: number) => boolean;

/** A topic's total retention: null limits are unlimited. */
export interface RetentionLimits {
  maxAgeMs: number | null;
  maxBytes: number | null;
  /**
   * The consumer barrier: the lowest stored consumer offset (the next offset that consumer reads);
   * a segment it points into or before is kept. Null when no barrier applies.
   */
  barrierOffset: number | null;
}

/** The topic options total retention reads. */
export interface RetentionOptions {
  retentionMaxAgeMs: number | null;
  retentionMaxBytes: number | null;
  tiered: boolean;
  retentionConsumerBarrier: boolean;
}

/**
 * A topic's limits, or null when it sets neither an age nor a size (no pass runs). The consumer
 * barrier applies on tiered topics that keep it on, so that no consumer finds the data it has yet
 * to read deleted; `consumerMinimum` is the lowest stored consumer offset, or null when none is.
 */
export function retentionLimitsOf(
  options: RetentionOptions,
  consumerMinimum: number | null,
): RetentionLimits | null {
  if (options.retentionMaxAgeMs === null && options.retentionMaxBytes === null) return null;
  return {
    maxAgeMs: options.retentionMaxAgeMs,
    maxBytes: options.retentionMaxBytes,
    barrierOffset: options.tiered && options.retentionConsumerBarrier ? consumerMinimum : null,
  };
}

/**
 * The decision for one pass at `wallMs`: a segment goes when the consumer barrier has passed it and
 * either the partition retains more than `maxBytes` or the segment's newest message is older than
 * `maxAgeMs`.
 */
export function retentionByLimits(limits: RetentionLimits, wallMs: number): RetentionDecision {
  const { maxAgeMs, maxBytes, barrierOffset } = limits;
  assert(maxAgeMs === null || maxAgeMs >= 0, "a retention age is not negative");
  assert(maxBytes === null || maxBytes >= 0, "a retention size is not negative");
  assert(barrierOffset === null || barrierOffset >= 0, "the consumer barrier is an offset");
  return (segment, retainedBytes) =>
    (barrierOffset === null || segment.endOffset < barrierOffset) &&
    ((maxBytes !== null && retainedBytes > maxBytes) ||
      (maxAgeMs !== null && segment.maxTimestampUs / 1000 < wallMs - maxAgeMs));
}

/**
 * How many segments from the front of the chain one pass deletes: oldest first, at most
 * `retentionSegmentsPerPassMax`, never the last (active) segment, stopping at the first segment
 * that is unsealed or that `decide` keeps. `decide` sees the bytes the partition would still
 * retain (every segment's size, local or remote) with the segments before it gone.
 */
export function frontSegmentsToDelete(
  segments: readonly RetentionSegment[],
  decide: RetentionDecision,
): number {
  assert(segments.length > 0, "a chain holds at least its active segment");
  assertChainOrder(segments);
  let retainedBytes = segments.reduce((sum, s) => sum + s.sizeBytes, 0);
  let count = 0;
  while (count < retentionSegmentsPerPassMax && count < segments.length - 1) {
    const front = segments[count]!;
    if (!front.sealed || !decide(front, retainedBytes)) break;
    retainedBytes -= front.sizeBytes;
    assert(retainedBytes >= 0, "the bytes retained after a deletion are not negative");
    count++;
  }
  assert(count < segments.length, "the active segment is never deleted");
  return count;
}

/**
 * When (wall clock ms) time alone next changes what a pass would delete: the moment the front
 * sealed segment passes `maxAgeMs`. Null when the topic has no age limit, no segment is sealed, or
 * the front one is already past the limit (a pass deletes it, or the consumer barrier holds it).
 */
export function nextRetentionAgeOutMs(
  segments: readonly RetentionSegment[],
  maxAgeMs: number | null,
  wallMs: number,
): number | null {
  if (maxAgeMs === null) return null;
  const front = segments[0];
  if (front === undefined || !front.sealed) return null;
  // `retentionByLimits` deletes once the newest message is older than the limit: a millisecond on.
  const ageOutMs = Math.floor(front.maxTimestampUs / 1000 + maxAgeMs) + 1;
  return ageOutMs > wallMs ? ageOutMs : null;
}
