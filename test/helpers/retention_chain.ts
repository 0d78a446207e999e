import type { RetentionSegment } from "../../src/log/retention/total_retention.ts";

/**
 * A chain for the retention tables: segments of 100 offsets and 1000 bytes each, contiguous, the last
 * one active; `newestMs[i]` stamps segment i, and `locations[i]` places it (else `otherwise`).
 */
export function retentionChain(
  newestMs: number[],
  locations: RetentionSegment["location"][],
  otherwise: RetentionSegment["location"],
): RetentionSegment[] {
  return newestMs.map((ms, i) => ({
    startOffset: i * 100,
    endOffset: i * 100 + 99,
    sizeBytes: 1000,
    maxTimestampUs: ms * 1000,
    sealed: i < newestMs.length - 1,
    location: locations[i] ?? otherwise,
  }));
}
