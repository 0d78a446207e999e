import { assert } from "../../runtime/assert.ts";
import { segmentStem } from "../../log/segment/segment.ts";
import type { DeadlineObjectStore } from "../../objectstore/retrying_object_store.ts";
import { keysPerRequestMax } from "../../objectstore/object_store.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { RequestBudget } from "./housekeeping_budget.ts";
import type { JobOutcome } from "./housekeeping_core.ts";
import type { HousekeepingMetrics } from "./housekeeping_metrics.ts";
import {
  clusterRoot,
  incarnationPrefix,
  parseObjectKey,
  type PartitionIncarnation,
} from "../bucket/object_keys.ts";

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

/** What deleting below a watermark needs. */
export interface WatermarkDeletesDeps {
  store: DeadlineObjectStore;
  clock: Clock;
  config: { deleteGraceMs: number; deleteBatchPerPass: number };
  metrics?: HousekeepingMetrics;
}

/** Bound on the listing pages one deletion job reads. */
const listingPagesMax = 1000;

/** What a deletion listing does: list from `fromOffset`, delete below `belowOffset`, queue up to `pendingMax`. */
export interface WatermarkListing {
  partition: string;
  incarnation: string;
  fromOffset: number;
  belowOffset: number;
  pendingMax: number;
}

/**
 * Lists the incarnation from `fromOffset` and deletes the objects of segments that start below
 * `belowOffset`, at most `delete_batch_per_pass` keys; the keys it finds beyond the batch it
 * reports as pending, up to one more than `pendingMax` (the core keeps at most the cap and lists
 * the rest again). It stops at the first object younger than the grace and when the quota leaves
 * no request for the delete, and reports where the listing got to. Queued keys are judged by their
 * age when listed: uploads never overwrite an object (they put if absent), so they stay as old.
 */
export async function deleteBelowWatermark(
  deps: WatermarkDeletesDeps,
  inc: PartitionIncarnation,
  job: WatermarkListing,
  budget: RequestBudget,
): Promise<JobOutcome> {
  const prefix = incarnationPrefix(inc);
  const root = clusterRoot(inc.prefix, inc.clusterId);
  const graceMs = deps.config.deleteGraceMs;
  const batchMax = deps.config.deleteBatchPerPass;
  const found: PendingDeletion[] = [];
  let listedBelow = job.belowOffset;
  let startAfter = job.fromOffset === 0 ? undefined : `${prefix}${segmentStem(job.fromOffset)}`;
  listing: for (let page = 0; page < listingPagesMax; page++) {
    // One request for this page and one kept for the delete that follows.
    if (budget.left < 2) {
      listedBelow = found.at(-1)?.startOffset ?? job.fromOffset;
      break;
    }
    budget.take();
    const listed = await deps.store.list(prefix, startAfter === undefined ? {} : { startAfter });
    const nowMs = deps.clock.wallMs();
    for (const obj of listed.objects) {
      const key = parseObjectKey(root, obj.key);
      if (key.kind !== "segment") continue;
      if (key.startOffset >= job.belowOffset) break listing;
      const young = nowMs - obj.lastModifiedMs < graceMs;
      // A merge's object that reaches the watermark holds offsets retention kept (another
      // replica's merge, in a cluster): the listing waits at it until the watermark passes its end.
      const straddles = (key.mergedEndOffset ?? key.startOffset) >= job.belowOffset;
      if (young || straddles || found.length > batchMax + job.pendingMax) {
        listedBelow = key.startOffset;
        break listing;
      }
      found.push({ key: obj.key, startOffset: key.startOffset });
    }
    if (listed.nextStartAfter === null) break;
    startAfter = listed.nextStartAfter;
  }
  const doomed = found.slice(0, batchMax);
  const failedFromOffset = await deleteKeys(deps, root, doomed, budget);
  return {
    kind: "delete_below",
    partition: job.partition,
    incarnation: job.incarnation,
    listedBelow,
    pending: found.slice(batchMax),
    failedFromOffset,
  };
}

/** Deletes a batch of the partition's queued keys (listed earlier, older than the grace then). */
export async function deletePending(
  deps: WatermarkDeletesDeps,
  inc: PartitionIncarnation,
  job: { partition: string; incarnation: string; keys: readonly PendingDeletion[] },
  budget: RequestBudget,
): Promise<JobOutcome> {
  const root = clusterRoot(inc.prefix, inc.clusterId);
  const requests = Math.ceil(job.keys.length / keysPerRequestMax);
  const common = { kind: "delete_pending", partition: job.partition, incarnation: job.incarnation } as const;
  if (budget.left < requests) return { ...common, taken: 0, failedFromOffset: null };
  const failedFromOffset = await deleteKeys(deps, root, job.keys, budget);
  return { ...common, taken: job.keys.length, failedFromOffset };
}

/** Deletes `doomed` and returns the lowest segment start whose delete failed, or null. */
async function deleteKeys(
  deps: WatermarkDeletesDeps,
  root: string,
  doomed: readonly PendingDeletion[],
  budget: RequestBudget,
): Promise<number | null> {
  if (doomed.length === 0) return null;
  budget.take(Math.ceil(doomed.length / keysPerRequestMax));
  const results = await deps.store.delete(doomed.map((d) => d.key));
  const failed = results.filter((r) => r.error !== null);
  deps.metrics?.deletedObjects.inc({ reason: "watermark" }, results.length - failed.length);
  let failedFromOffset: number | null = null;
  for (const f of failed) {
    const key = parseObjectKey(root, f.key);
    if (key.kind === "segment") failedFromOffset = Math.min(failedFromOffset ?? Infinity, key.startOffset);
  }
  return failedFromOffset;
}
