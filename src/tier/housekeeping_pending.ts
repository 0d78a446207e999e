import { assert } from "../runtime/assert.ts";

/**
 * A partition's pending deletions, as pure functions: the objects a deletion listing found below
 * the eligible watermark beyond the batch it deleted at once, queued for later runs, at most
 * `delete_pending_per_partition` of them. Keys past the cap are not kept: the listing cursor stays
 * below them, so the next listing finds them again. Nothing is dropped, only listed again.
 */

/** An object listed for deletion and waiting for a later run. */
export interface PendingDeletion {
  key: string;
  /** First offset of the segment the object belongs to. */
  startOffset: number;
}

/** A partition's deletion cursors and queue. */
export interface DeletionCursors {
  /** Every object of a segment that starts below this offset is deleted. */
  deletedBelow: number;
  /** Every object of a segment that starts below this offset is deleted or in `pending`. */
  listedBelow: number;
  /** In key order; every start below `listedBelow`, at most the cap. */
  pending: readonly PendingDeletion[];
}

/** What a deletion job (a listing or a batch of pending keys) found and did. */
export interface DeletionReport {
  /** Where the job's listing stopped, or null when it listed nothing (the cursor stays). */
  listedBelow: number | null;
  /** Keys the listing found beyond the batch it deleted, in key order. */
  pending: readonly PendingDeletion[];
  /** Keys taken from the front of the queue (deleted or failed). */
  takenFromQueue: number;
  /** The lowest segment start whose delete failed, or null. */
  failedFromOffset: number | null;
}

/**
 * The cursors after a deletion job: a failed delete moves the listing cursor back to its segment
 * (it is listed again, with whatever was queued after it), keys at or past the listing cursor go
 * (the next listing finds them), and past `pendingMax` the queue is cut at a segment boundary,
 * the listing cursor moving back to the first segment cut off.
 */
export function settleDeletions(
  cursors: DeletionCursors,
  report: DeletionReport,
  pendingMax: number,
): DeletionCursors {
  assert(pendingMax >= 1, "the pending deletions cap is at least one key");
  assert(report.takenFromQueue <= cursors.pending.length, "a job takes only keys that are queued");
  assert(
    report.listedBelow === null || report.listedBelow >= cursors.listedBelow,
    "a listing goes on from the listing cursor",
  );
  let listedBelow = report.listedBelow ?? cursors.listedBelow;
  if (report.failedFromOffset !== null) listedBelow = Math.min(listedBelow, report.failedFromOffset);
  const queued = [...cursors.pending.slice(report.takenFromQueue), ...report.pending]
    .filter((p) => p.startOffset < listedBelow);
  assertKeyOrder(queued);
  const kept = cappedAtSegment(queued, pendingMax);
  if (kept.length < queued.length) listedBelow = queued[kept.length]!.startOffset;
  const deletedBelow = Math.min(listedBelow, kept[0]?.startOffset ?? Infinity);
  assert(deletedBelow >= cursors.deletedBelow, "the deletion cursor never moves back");
  return { deletedBelow, listedBelow, pending: kept };
}

/** The longest prefix of `queued` of at most `pendingMax` keys that ends at a segment boundary. */
function cappedAtSegment(queued: readonly PendingDeletion[], pendingMax: number): readonly PendingDeletion[] {
  if (queued.length <= pendingMax) return queued;
  const cutStart = queued[pendingMax]!.startOffset;
  let end = pendingMax;
  while (end > 0 && queued[end - 1]!.startOffset === cutStart) end--;
  return queued.slice(0, end);
}

function assertKeyOrder(queued: readonly PendingDeletion[]): void {
  for (let i = 1; i < queued.length; i++) {
    assert(queued[i - 1]!.key < queued[i]!.key, "pending deletions are in key order, each once");
    assert(queued[i - 1]!.startOffset <= queued[i]!.startOffset, "pending deletions are in segment order");
  }
}
