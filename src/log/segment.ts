import type { DiskFile } from "../runtime/disk.ts";
import type { RemoteMarker } from "./remote_marker.ts";
import { SparseIndex } from "./sparse_index.ts";

/**
 * Where a segment's bytes are: only on local disk, in both places (uploaded, a marker beside the
 * `.log`), or only in the object store (the `.log` evicted; the marker and `.index` remain).
 */
export type SegmentLocation = "local" | "uploaded" | "remote";

/** The zero-padded stem shared by a segment's files and, later, its object keys. */
export function segmentStem(startOffset: number): string {
  return String(startOffset).padStart(20, "0");
}

/**
 * One segment of a partition's log: `{stem}.log` (batches) and `{stem}.index` (sparse index).
 * The active segment holds its files (opened `reopenable`: a disk bounding its open files closes
 * them between uses and reopens them on the next) and grows; a sealed one is immutable. `visibleSizeBytes` is
 * how far readers may go: the bytes of acknowledged batches.
 */
export class Segment {
  readonly dir: string;
  readonly startOffset: number;
  readonly index: SparseIndex;
  /** Last offset in the segment; `startOffset - 1` while it is empty. */
  endOffset: number;
  sizeBytes: number;
  visibleSizeBytes: number;
  visibleEndOffset: number;
  sealed: boolean;
  /** Base timestamp of the first batch, for the age roll; null while empty. */
  firstTimestampUs: number | null;
  maxTimestampUs: number;
  /** Position of the last index entry's batch, for the index interval. */
  lastIndexedPosition: number;
  location: SegmentLocation = "local";
  /** The `.remote` marker's fields when one exists (uploaded or remote). */
  marker: RemoteMarker | null = null;
  logFile: DiskFile | null = null;

  constructor(dir: string, startOffset: number, index = new SparseIndex()) {
    this.dir = dir;
    this.startOffset = startOffset;
    this.index = index;
    this.endOffset = startOffset - 1;
    this.sizeBytes = 0;
    this.visibleSizeBytes = 0;
    this.visibleEndOffset = startOffset - 1;
    this.sealed = false;
    this.firstTimestampUs = null;
    this.maxTimestampUs = 0;
    this.lastIndexedPosition = -1;
  }

  get stem(): string {
    return segmentStem(this.startOffset);
  }

  get logPath(): string {
    return `${this.dir}/${this.stem}.log`;
  }

  get indexPath(): string {
    return `${this.dir}/${this.stem}.index`;
  }

  get markerPath(): string {
    return `${this.dir}/${this.stem}.remote`;
  }

  get isEmpty(): boolean {
    return this.endOffset < this.startOffset;
  }
}
