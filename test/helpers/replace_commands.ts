import type { RemoteMarker } from "../../src/log/remote/remote_marker.ts";
import type { ReplaceRemoteSegments } from "../../src/log/segment/segment_replacement.ts";

// Replaces of remote segments as the control-log tests commit them: one merged segment of
// incarnation 00000000000000aa-0 in place of the segments from `startOffset` to `endOffset`.

/** The marker of a merged segment from `startOffset` to `endOffset`, every other field fixed. */
export function mergedMarker(startOffset: number, endOffset: number): RemoteMarker {
  return {
    startOffset,
    endOffset,
    sizeBytes: 4096,
    indexSizeBytes: 48,
    startTimestampUs: 1_000,
    endTimestampUs: 2_000,
    maxTimestampUs: 2_000,
    createdRevision: "00000000000000aa",
    purgeGeneration: 0,
    logCrc32: 0xdeadbeef,
    merged: true,
  };
}

/** The replace of `partition`'s segments from `startOffset` to `endOffset` by one merged segment. */
export function mergeReplace(
  partition: string,
  startOffset: number,
  endOffset: number,
): ReplaceRemoteSegments {
  return {
    kind: "replace_remote_segments",
    partition,
    purgeGeneration: 0,
    markers: [mergedMarker(startOffset, endOffset)],
  };
}
