import { assert } from "../../runtime/assert.ts";
import type { SparseIndex } from "../../log/segment/sparse_index.ts";

export interface ChunkSpan {
  /** Chunk number within the segment. */
  chunk: number;
  /** Byte range [start, end) of the segment's `.log`. */
  start: number;
  end: number;
}

/**
 * Where a remote segment's chunks start: chunk k at the sparse-index entry nearest to k ×
 * `chunkBytes` (docs/DESIGN.md, "The chunk cache"). Index entries point at batch starts, so a chunk
 * boundary never splits a batch and a batch never costs two GETs. A segment holds its size over
 * `chunkBytes`, rounded, chunks (at least one): a tail of less than half a chunk (a segment that
 * rolled just past `segment_size`) joins the last chunk rather than cost a GET of its own. Without
 * an index the segment is one chunk. Pure: a function of the index alone.
 */
export function chunkStarts(index: SparseIndex | null, segmentBytes: number, chunkBytes: number): number[] {
  assert(chunkBytes > 0, "chunk size must be positive");
  const positions = [0];
  for (let i = 0; i < (index?.length ?? 0); i++) {
    const position = index!.positionAt(i);
    if (position > 0 && position < segmentBytes) positions.push(position);
  }
  const starts = new Set<number>([0]);
  const chunks = Math.max(1, Math.round(segmentBytes / chunkBytes));
  let from = 0;
  for (let k = 1; k < chunks; k++) {
    const target = k * chunkBytes;
    // Positions are increasing, so the nearest one is found by walking forward from the last.
    while (
      from + 1 < positions.length &&
      Math.abs(positions[from + 1]! - target) <= Math.abs(positions[from]! - target)
    ) from++;
    starts.add(positions[from]!);
  }
  return [...starts].sort((a, b) => a - b);
}

/** The chunk holding byte `position` of the segment. */
export function chunkAt(starts: readonly number[], segmentBytes: number, position: number): ChunkSpan {
  assert(position >= 0 && position < segmentBytes, "position must be inside the segment");
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (starts[mid]! <= position) lo = mid;
    else hi = mid - 1;
  }
  return { chunk: lo, start: starts[lo]!, end: starts[lo + 1] ?? segmentBytes };
}
