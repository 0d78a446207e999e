import { assert } from "../../runtime/assert.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import { unlinkIfPresent } from "../../runtime/disk/file_ops.ts";
import type { Segment } from "./segment.ts";
import { closeFiles, SegmentChain } from "./segment_chain.ts";
import { frontSegmentsToDelete, type RetentionDecision } from "../retention/total_retention.ts";

/**
 * Deleting segments, run inside the writer loop: total retention's front deletion and the purge.
 * Both go oldest first, so a crash part-way leaves a contiguous suffix that boot accepts, and a
 * segment leaves the chain before its files go, so no new read picks up one whose files are going
 * away. One directory fsync makes a pass's unlinks durable.
 */

/** Deletes the front segments `decide` selects (see `frontSegmentsToDelete`); returns how many. */
export async function deleteFront(
  disk: Disk,
  dir: string,
  chain: SegmentChain,
  decide: RetentionDecision,
): Promise<number> {
  const doomed = frontSegmentsToDelete(chain.segments, decide);
  assert(doomed < chain.segments.length, "retention leaves the active segment");
  const forgotten = chain.segments.slice(0, doomed).filter((s) => s.marker !== null).length;
  if (forgotten > 0) {
    // The table forgets them before their files go: tiered segments are the chain's prefix, so a
    // crash in between leaves at most local segments at the front, which the next pass takes.
    const live = () => chain.segments.slice(doomed).flatMap((s) => s.marker === null ? [] : [s.marker]);
    await chain.remoteTable.forget(chain.segments[doomed]!.startOffset, forgotten, live);
  }
  for (let deleted = 0; deleted < doomed; deleted++) {
    // Out of the list first, so no new read picks up a segment whose files are going away.
    const front = chain.shiftFront();
    assertDeletable(front);
    if (front.location !== "remote") await disk.unlink(front.logPath);
    await unlinkIfPresent(disk, front.indexPath);
    if (front.mayHaveTxnIndexFile) await unlinkIfPresent(disk, front.txnIndexPath);
  }
  if (doomed > 0) await disk.fsyncDir(dir);
  return doomed;
}

/** Deletes every segment and starts the chain again at offset 0 with a new active segment. */
export async function purgeSegments(disk: Disk, dir: string, chain: SegmentChain): Promise<void> {
  await chain.backgroundSync;
  // The producers' snapshots go first: a crash part-way leaves none holding batches of the old log.
  await chain.producerSnapshots.deleteAfter(-1);
  chain.producers.clear();
  const doomed = chain.takeAll();
  // Oldest first, so a crash part-way leaves a contiguous suffix that boot accepts: the remote
  // table (the tiered prefix) first, then each segment's files.
  await chain.remoteTable.remove();
  for (const segment of doomed) {
    assert(segment.location !== "remote" || segment.marker !== null, "a remote segment keeps its marker");
    await closeFiles(segment);
    if (segment.location !== "remote") await disk.unlink(segment.logPath);
    await unlinkIfPresent(disk, segment.indexPath);
    if (segment.mayHaveTxnIndexFile) await unlinkIfPresent(disk, segment.txnIndexPath);
  }
  await disk.fsyncDir(dir);
  chain.restart(await SegmentChain.createSegment(disk, dir, 0));
  // The new log starts with no epoch of its own.
  chain.epochs.truncateFrom(0);
  await chain.epochs.persist();
}

/**
 * What front deletion relies on in each segment it takes: sealed (retention never takes the active
 * one), and a remote one with its marker, or the remote table would not forget it.
 */
function assertDeletable(segment: Segment): void {
  assert(segment.sealed, "retention deletes only sealed segments");
  assert(segment.location !== "remote" || segment.marker !== null, "a remote segment keeps its marker");
}
