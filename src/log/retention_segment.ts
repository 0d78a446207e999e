import { assert } from "../runtime/assert.ts";
import type { SegmentLocation } from "./segment.ts";

/**
 * What the retention decisions, local (`local_retention.ts`) and total (`total_retention.ts`), look
 * at in a segment. A `Segment` is one.
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
