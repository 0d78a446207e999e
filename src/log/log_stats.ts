/** One segment as a partition's stats describe it. */
export interface SegmentStats {
  startOffset: number;
  endOffset: number;
  sizeBytes: number;
  sealed: boolean;
  location: "local" | "uploaded" | "remote";
}

/** A partition log's extent and its segments, oldest first. */
export interface LogStats {
  firstOffset: number;
  nextOffset: number;
  sizeBytes: number;
  segments: SegmentStats[];
}
