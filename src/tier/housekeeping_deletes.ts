import { segmentStem } from "../log/segment.ts";
import type { DeadlineObjectStore } from "../objectstore/deadline_object_store.ts";
import { keysPerRequestMax } from "../objectstore/object_store.ts";
import type { Clock } from "../runtime/clock.ts";
import type { RequestBudget } from "./housekeeping_budget.ts";
import type { JobOutcome } from "./housekeeping_core.ts";
import type { PendingDeletion } from "./housekeeping_pending.ts";
import type { HousekeepingMetrics } from "./housekeeping_metrics.ts";
import { clusterRoot, incarnationPrefix, parseObjectKey, type PartitionIncarnation } from "./object_keys.ts";

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
      if (young || found.length > batchMax + job.pendingMax) {
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
