import type { PartitionManifest } from "../bucket/manifest.ts";
import { chainEndingAt, type TieredObject } from "./transfer_chain.ts";

/**
 * What a restore takes of one partition from the bucket (docs/DESIGN.md, "Restore"), decided by
 * pure functions over what the store listed and said: which incarnation, which of its segments
 * need a HEAD, and the chain of segments to plant as markers. The shell (`restore_reader.ts`) makes
 * the requests.
 */

/** An incarnation of the partition the listing found, with or without a dead mark. */
export interface ListedIncarnation {
  createdRevision: string;
  purgeGeneration: number;
  dead: boolean;
  hasManifest: boolean;
}

/** A segment object of the chosen incarnation, as the listing found it. */
export interface ListedSegment {
  startOffset: number;
  /** A merged segment's end offset, from its keys; null for keys of the start offset alone. */
  mergedEndOffset: number | null;
  logKey: string | null;
  logSizeBytes: number;
  indexKey: string | null;
}

/** Where a restored segment's fields came from. */
export type RestoreSource = "manifest" | "listing";

export interface RestoredSegment extends TieredObject {
  source: RestoreSource;
}

/** A range of offsets the bucket holds that the restore leaves out, and why. */
export interface LeftOut {
  startOffset: number;
  endOffset: number;
  reason: string;
}

export interface PartitionRestorePlan {
  createdRevision: string;
  purgeGeneration: number;
  /** Oldest first, contiguous; empty when the bucket holds nothing of the partition. */
  segments: RestoredSegment[];
  /** The offset a produce continues at: after the last segment's last record (0 with none). */
  nextOffset: number;
  /** Runs of consecutive segments by where their fields came from, oldest first. */
  sources: { fromOffset: number; toOffset: number; source: RestoreSource }[];
  leftOut: LeftOut[];
}

export class RestoreError extends Error {
  override name = "RestoreError";
  constructor(reason: string, options?: ErrorOptions) {
    super(`Cannot restore: ${reason}`, options);
  }
}

/**
 * The incarnation a restore takes: the newest purge generation (a purge starts the offsets again,
 * so an older one holds what was purged). Refused when it is marked dead (GC has begun deleting it)
 * or when the partition holds incarnations of more than one revision (which a topic id never does).
 * Null when the bucket holds none.
 */
export function chooseIncarnation(
  label: string,
  found: readonly ListedIncarnation[],
): ListedIncarnation | null {
  if (found.length === 0) return null;
  const revisions = new Set(found.map((i) => i.createdRevision));
  if (revisions.size > 1) {
    throw new RestoreError(
      `partition ${label} has incarnations of ${revisions.size} revisions: ${[...revisions].join(", ")}`,
    );
  }
  const newest = found.reduce((a, b) => (b.purgeGeneration > a.purgeGeneration ? b : a));
  if (newest.dead) {
    throw new RestoreError(
      `partition ${label}'s incarnation ${newest.createdRevision}-${newest.purgeGeneration} is marked dead: GC is deleting it`,
    );
  }
  return newest;
}

/**
 * The `.log` keys whose HEAD the plan needs: every listed segment, with its `.index`, at or above the
 * manifest's watermark that the manifest does not describe whole (no manifest, a segment uploaded
 * after it, or one still local when it was written), or describes with another size.
 */
export function headsNeeded(manifest: PartitionManifest | null, listed: readonly ListedSegment[]): string[] {
  return candidates(manifest, listed)
    .filter((s) => manifestEntry(manifest, s) === null)
    .map((s) => s.logKey!);
}

/**
 * The chain to restore: the listed segments (each with its `.log` and `.index`) at or above the
 * manifest's watermark, their fields from the manifest where it describes them whole and from
 * their HEAD otherwise, and of those the longest run without a gap that ends with the newest (a
 * log cannot hold a hole; what lies before the gap is left out and reported), through a merge's
 * object rather than the segments it replaced (`chainEndingAt`). The listing decides what exists:
 * a manifest entry whose objects are gone is not restored.
 */
export function planPartition(
  incarnation: Pick<ListedIncarnation, "createdRevision" | "purgeGeneration">,
  manifest: PartitionManifest | null,
  listed: readonly ListedSegment[],
  heads: ReadonlyMap<string, TieredObject>,
): PartitionRestorePlan {
  const leftOut: LeftOut[] = [];
  const described: RestoredSegment[] = [];
  for (const s of candidates(manifest, listed)) {
    const fromManifest = manifestEntry(manifest, s);
    const head = heads.get(s.logKey!);
    if (fromManifest !== null) described.push({ ...fromManifest, source: "manifest" });
    else if (head !== undefined) described.push({ ...head, source: "listing" });
    else {leftOut.push({
        startOffset: s.startOffset,
        endOffset: s.startOffset,
        reason: "its object could not be read",
      });}
  }
  for (const s of listed) {
    if (s.logKey === null || s.indexKey === null) {
      const missing = s.logKey === null ? ".log" : ".index";
      leftOut.push({
        startOffset: s.startOffset,
        endOffset: s.startOffset,
        reason: `its ${missing} object is missing`,
      });
    }
  }
  const segments = newestRun(described, leftOut);
  const last = segments.at(-1);
  return {
    ...incarnation,
    segments,
    nextOffset: last === undefined ? 0 : last.endOffset + 1,
    sources: sourceRuns(segments),
    leftOut: leftOut.sort((a, b) => a.startOffset - b.startOffset),
  };
}

/**
 * Segments with both objects, at or above the manifest's watermark, oldest first; those within a
 * listed merge's range are left for it (the bucket keeps what a merge replaced for a while, and a
 * merge's bytes are theirs), so they cost no HEAD.
 */
function candidates(manifest: PartitionManifest | null, listed: readonly ListedSegment[]): ListedSegment[] {
  const watermark = manifest?.deletedUpToOffset ?? 0;
  const whole = listed.filter((s) => s.logKey !== null && s.indexKey !== null && s.startOffset >= watermark);
  const merges = whole.filter((s) => s.mergedEndOffset !== null);
  // Listed segments differ in start or end (their keys do): another merge that spans one replaced it.
  const replaced = (s: ListedSegment) =>
    merges.some((m) =>
      m !== s && m.startOffset <= s.startOffset && (s.mergedEndOffset ?? s.startOffset) <= m.mergedEndOffset!
    );
  return whole.filter((s) => !replaced(s))
    .sort((a, b) => a.startOffset - b.startOffset || (a.mergedEndOffset ?? -1) - (b.mergedEndOffset ?? -1));
}

/** The manifest's whole description of a listed segment, or null (absent, partial or another size). */
function manifestEntry(manifest: PartitionManifest | null, s: ListedSegment): TieredObject | null {
  const e = manifest?.segments.find((x) =>
    x.startOffset === s.startOffset && (x.merged === true ? x.endOffset : null) === s.mergedEndOffset
  );
  if (e === undefined || e.sizeBytes !== s.logSizeBytes) return null;
  if (
    e.logCrc32 === null || e.indexSizeBytes === null || e.startTimestampUs === null ||
    e.endTimestampUs === null
  ) {
    return null;
  }
  return {
    key: s.logKey!,
    startOffset: e.startOffset,
    endOffset: e.endOffset,
    sizeBytes: e.sizeBytes,
    indexSizeBytes: e.indexSizeBytes,
    startTimestampUs: e.startTimestampUs,
    endTimestampUs: e.endTimestampUs,
    maxTimestampUs: e.maxTimestampUs,
    logCrc32: e.logCrc32,
    merged: s.mergedEndOffset !== null,
  };
}

/**
 * The longest gapless run ending with the newest segment (`chainEndingAt`); the older ones go to
 * `leftOut`, and those a merge's object in the run replaced are neither.
 */
function newestRun(sorted: readonly RestoredSegment[], leftOut: LeftOut[]): RestoredSegment[] {
  if (sorted.length === 0) return [];
  const end = Math.max(...sorted.map((s) => s.endOffset));
  const run = chainEndingAt(sorted, end);
  const first = run[0]!.startOffset;
  for (const s of sorted) {
    if (s.endOffset >= first) continue;
    leftOut.push({
      startOffset: s.startOffset,
      endOffset: s.endOffset,
      reason: `a gap lies between it and offset ${first}`,
    });
  }
  return run;
}

function sourceRuns(segments: readonly RestoredSegment[]): PartitionRestorePlan["sources"] {
  const runs: PartitionRestorePlan["sources"] = [];
  for (const s of segments) {
    const run = runs.at(-1);
    if (run !== undefined && run.source === s.source) run.toOffset = s.endOffset;
    else runs.push({ fromOffset: s.startOffset, toOffset: s.endOffset, source: s.source });
  }
  return runs;
}
