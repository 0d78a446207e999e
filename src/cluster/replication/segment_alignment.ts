/** A segment as the alignment check sees it; `endOffset` is inclusive (`startOffset - 1` while empty). */
export interface AlignedSegment {
  startOffset: number;
  endOffset: number;
  location: "local" | "uploaded" | "remote";
}

/** What a follower does about where its last segment starts, before it appends its leader's batches. */
export type Alignment =
  | { kind: "aligned" }
  /** Cut back to `offset` (the start of the segment before) and fetch from there again. */
  | { kind: "refetch"; offset: number }
  /** The boundary differs from the leader's below what can be cut (the segment before is not local). */
  | { kind: "stuck"; boundary: number };

/**
 * A follower's log that ends in an empty segment where the leader's log starts none (`leaderStarts`,
 * the starts in the leader's answer from the follower's log end on) has a boundary only this
 * replica made: it rolled there as a leader deposed before a record followed. Its segments must end
 * where the leader's do, so it cuts back to the start of the segment before, when that is local.
 */
export function alignmentOf(
  segments: readonly AlignedSegment[],
  logEndOffset: number,
  leaderStarts: readonly number[],
): Alignment {
  const active = segments[segments.length - 1];
  const previous = segments[segments.length - 2];
  if (active === undefined || previous === undefined) return { kind: "aligned" };
  const emptyAtEnd = active.endOffset < active.startOffset && active.startOffset === logEndOffset;
  if (!emptyAtEnd || leaderStarts.includes(active.startOffset)) return { kind: "aligned" };
  if (previous.location !== "local") return { kind: "stuck", boundary: active.startOffset };
  return { kind: "refetch", offset: previous.startOffset };
}
