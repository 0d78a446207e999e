import { assert } from "../../runtime/assert.ts";

/**
 * Which remote segments of a partition the merger joins next (docs/DESIGN.md, "The adjacent-segment
 * merger"), as a pure function of the chain. Segments rolled by time on a quiet topic are small,
 * and each costs a marker, an index and a GET of its own; the merger joins runs of them into
 * objects of about the topic's `segment_size`.
 */

/** What the plan needs of a segment of the chain. */
export interface MergeCandidate {
  startOffset: number;
  endOffset: number;
  sizeBytes: number;
  /** Only remote segments (in the store, their `.log` evicted) are merged. */
  remote: boolean;
}

export interface MergeBounds {
  /** The tiered floor (exclusive): only segments below it are in the store. */
  floor: number;
  /** Retention deleted below this: a segment starting below it is going. */
  deletedUpToOffset: number;
  /** A restored partition's segments below this are its source's objects, never merged. */
  ownFromOffset: number;
  /** The topic's `segment_size`: a merged object is at most this big. */
  targetBytes: number;
  /** Segments one merge takes at most (each costs a GET). */
  segmentsMax: number;
  /**
   * Where the partition's leader epochs start: a run never joins a segment that starts one, so that
   * every object holds batches of one epoch, which a state transfer's epoch search relies on.
   */
  epochStartOffsets: ReadonlySet<number>;
}

/**
 * The merger's progress in a chain (docs/DESIGN.md, "The adjacent-segment merger"): the remote
 * segments that are merges, and the small ones (under half of `segmentSizeBytes`) it may still join.
 */
export function mergeProgressOf(
  segments: readonly { location: string; sizeBytes: number; mergedEndOffset: number | null }[],
  segmentSizeBytes: number,
): { mergedSegments: number; smallRemoteSegments: number } {
  let mergedSegments = 0;
  let smallRemoteSegments = 0;
  // Remote segments are the chain's prefix: the walk ends at the first that is not.
  for (const s of segments) {
    if (s.location !== "remote") break;
    if (s.mergedEndOffset !== null) mergedSegments++;
    if (s.sizeBytes < segmentSizeBytes / 2) smallRemoteSegments++;
  }
  return { mergedSegments, smallRemoteSegments };
}

/** A run to merge: the `count` segments from the `first`th of the chain. */
export interface MergeRun {
  first: number;
  count: number;
  sizeBytes: number;
}

/**
 * The first run of the chain worth merging, or null. A segment is small below half of
 * `targetBytes`; a run is two or more adjacent small remote segments, in the store and the
 * partition's own, of at most `targetBytes` and `segmentsMax` together. A run is merged once it is
 * closed: it holds at least half of `targetBytes`, or the segment after it could not join it (too
 * big, not remote, past the bound, or the start of a leader epoch), so that a run still growing at
 * the floor waits for more rather than being merged again and again.
 */
export function planMerge(chain: readonly MergeCandidate[], bounds: MergeBounds): MergeRun | null {
  assert(bounds.targetBytes > 0 && bounds.segmentsMax >= 2, "a merge joins at least two segments");
  const small = bounds.targetBytes / 2;
  const mergeable = (s: MergeCandidate) =>
    s.remote && s.sizeBytes < small && s.endOffset < bounds.floor &&
    s.startOffset >= bounds.deletedUpToOffset && s.startOffset >= bounds.ownFromOffset;
  let first = 0;
  // Each pass moves `first` past at least one segment: bounded by the chain.
  while (first < chain.length) {
    if (!mergeable(chain[first]!)) {
      first++;
      continue;
    }
    let count = 0;
    let sizeBytes = 0;
    const joins = (s: MergeCandidate) =>
      mergeable(s) && sizeBytes + s.sizeBytes <= bounds.targetBytes &&
      (count === 0 || !bounds.epochStartOffsets.has(s.startOffset));
    while (first + count < chain.length && count < bounds.segmentsMax && joins(chain[first + count]!)) {
      sizeBytes += chain[first + count]!.sizeBytes;
      count++;
    }
    const next = chain[first + count];
    const closed = sizeBytes >= small || count === bounds.segmentsMax ||
      (next !== undefined && next.remote && next.endOffset < bounds.floor);
    if (count >= 2 && closed) return { first, count, sizeBytes };
    first += Math.max(count, 1);
  }
  return null;
}
