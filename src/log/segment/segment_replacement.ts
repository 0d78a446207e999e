import { assert } from "../../runtime/assert.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import { unlinkIfPresent } from "../../runtime/disk/file_ops.ts";
import type { MarkerIdentity, RemoteMarker } from "../remote/remote_marker.ts";
import { remoteSegmentOf, type Segment } from "./segment.ts";
import type { SegmentChain } from "./segment_chain.ts";

/**
 * `ReplaceRemoteSegments`, a command of the control log: committed once the replacing segments'
 * objects are stored, applied by every holder of the partition (`Partition.replaceRemote`).
 */
export interface ReplaceRemoteSegments {
  kind: "replace_remote_segments";
  partition: string;
  purgeGeneration: number;
  /** The replacing segments' markers, oldest first, contiguous. */
  markers: RemoteMarker[];
}

/**
 * A replace of remote segments (docs/DESIGN.md, "The adjacent-segment merger"): a contiguous range
 * of a partition's remote segments goes, and the segments of `markers` take its place, covering the
 * same offsets. A merge puts one segment in; compaction may put in several. Each replacing segment
 * covers whole segments of the range, so that the remote table's records, each of which replaces
 * the segments within its own range, leave a gapless chain after any of them: a crash that tears
 * the append leaves the range part replaced, never cut.
 */
export type ReplaceDecision =
  | { kind: "replace"; first: number; count: number }
  /** The chain holds the replacing segments already: a replay of a replace applied before. */
  | { kind: "already" }
  /**
   * Not yet: a segment of the range is still local, or the floor is not past it (a follower whose
   * local retention or floor is behind its leader's); the replace applies once the chain catches up.
   */
  | { kind: "wait"; reason: string }
  /** The chain no longer holds the range as the replace found it: nothing changes. */
  | { kind: "rejected"; reason: string };

/** Why a replace can be given no other chain than the one it names: a bug in whoever built it. */
function assertReplacing(markers: readonly RemoteMarker[]): void {
  assert(markers.length > 0, "Cannot replace remote segments by none");
  let next = markers[0]!.startOffset;
  for (const m of markers) {
    assert(
      m.startOffset === next && m.endOffset >= m.startOffset,
      `Cannot replace remote segments by ${m.startOffset}..${m.endOffset}: the replacing segments are not contiguous`,
    );
    next = m.endOffset + 1;
  }
}

/**
 * Which segments of the chain a replace by `markers` takes out (pure): the remote segments from the
 * one that starts where the first marker does to the one that ends where the last ends, each marker
 * ending where one of them does. Rejected when the range is no longer whole and remote (retention
 * deleted part of it, a purge started the log again) or when the markers are of another incarnation;
 * put off (`wait`) while a segment of the range is local.
 */
export function decideReplace(
  segments: readonly Segment[],
  markers: readonly RemoteMarker[],
  identity: MarkerIdentity,
): ReplaceDecision {
  assertReplacing(markers);
  const start = markers[0]!.startOffset;
  const end = markers.at(-1)!.endOffset;
  const foreign = markers.find((m) =>
    m.createdRevision !== identity.createdRevision || m.purgeGeneration !== identity.purgeGeneration
  );
  if (foreign !== undefined) {
    return {
      kind: "rejected",
      reason: `its segments are of ${foreign.createdRevision}-${foreign.purgeGeneration}`,
    };
  }
  const first = segments.findIndex((s) => s.startOffset === start);
  if (first < 0) return { kind: "rejected", reason: `no segment starts at ${start}` };
  if (markers.every((m, i) => sameSegment(segments[first + i], m))) return { kind: "already" };
  const ends = new Set(markers.map((m) => m.endOffset));
  let count = 0;
  // Each pass takes one segment of the chain: bounded by it.
  for (let i = first; i < segments.length && segments[i]!.startOffset <= end; i++, count++) {
    const s = segments[i]!;
    if (s.location !== "remote") {
      return { kind: "wait", reason: `segment ${s.startOffset} is not remote yet` };
    }
    if (s.endOffset > end) return { kind: "rejected", reason: `segment ${s.startOffset} ends past ${end}` };
    ends.delete(s.endOffset);
  }
  if (ends.size > 0) {
    return { kind: "rejected", reason: `no segment of ${start}..${end} ends at ${[...ends][0]}` };
  }
  return { kind: "replace", first, count };
}

function sameSegment(segment: Segment | undefined, m: RemoteMarker): boolean {
  return segment !== undefined && segment.location === "remote" && segment.startOffset === m.startOffset &&
    segment.endOffset === m.endOffset && segment.sizeBytes === m.sizeBytes &&
    (segment.mergedEndOffset !== null) === m.merged;
}

/**
 * A replace's durable steps, run inside the writer loop: the replacing markers are appended to the
 * remote table and fsynced (each replaces the segments within its range as the table is read), the
 * chain takes the new segments, then the replaced segments' `.index` files are unlinked and the
 * directory fsynced (a crash before leaves them to boot, which removes an `.index` of no segment).
 * The objects are not touched: a read in flight holds the replaced segments and reads their objects,
 * which stay in the store for `delete_grace` at least. The replacing segments' indexes are loaded
 * from the store on their first read.
 */
export async function replaceRemoteSegments(
  disk: Disk,
  dir: string,
  chain: SegmentChain,
  markers: readonly RemoteMarker[],
  identity: MarkerIdentity,
): Promise<ReplaceDecision> {
  const decision = decideReplace(chain.segments, markers, identity);
  if (decision.kind !== "replace") return decision;
  const out = chain.segments.slice(decision.first, decision.first + decision.count);
  await chain.remoteTable.append(markers, decision.count);
  chain.replaceRange(decision.first, decision.count, markers.map((m) => remoteSegmentOf(dir, m)));
  for (const s of out) {
    await unlinkIfPresent(disk, s.indexPath);
    if (s.mayHaveTxnIndexFile) await unlinkIfPresent(disk, s.txnIndexPath);
  }
  await disk.fsyncDir(dir);
  return decision;
}
