import { segmentStem } from "../log/segment.ts";
import type { DeadlineObjectStore } from "../objectstore/deadline_object_store.ts";
import type { Clock } from "../runtime/clock.ts";
import type { RequestBudget } from "./housekeeping_budget.ts";
import type { JobOutcome } from "./housekeeping_core.ts";
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

/**
 * Lists the incarnation from `fromOffset` and deletes the objects of segments that start below
 * `belowOffset`, at most `delete_batch_per_pass` keys, stopping at the first object younger than
 * the grace. Reports the offset below which everything is gone (a failed delete or a spent quota
 * reports less, and the next run lists from there again).
 */
export async function deleteBelowWatermark(
  deps: WatermarkDeletesDeps,
  partitionKey: string,
  inc: PartitionIncarnation,
  fromOffset: number,
  belowOffset: number,
  budget: RequestBudget,
): Promise<JobOutcome> {
  const prefix = incarnationPrefix(inc);
  const root = clusterRoot(inc.prefix, inc.clusterId);
  const graceMs = deps.config.deleteGraceMs;
  const doomed: string[] = [];
  let reached = fromOffset;
  let stoppedAt: number | null = null;
  let startAfter = fromOffset === 0 ? undefined : `${prefix}${segmentStem(fromOffset)}`;
  listing: for (let page = 0; page < listingPagesMax; page++) {
    // One request for this page and one kept for the delete that follows.
    if (budget.left < 2) {
      stoppedAt = reached;
      break;
    }
    budget.take();
    const listed = await deps.store.list(prefix, startAfter === undefined ? {} : { startAfter });
    const nowMs = deps.clock.wallMs();
    for (const obj of listed.objects) {
      const key = parseObjectKey(root, obj.key);
      if (key.kind !== "segment") continue;
      if (key.startOffset >= belowOffset) break listing;
      const young = nowMs - obj.lastModifiedMs < graceMs;
      if (young || doomed.length >= deps.config.deleteBatchPerPass) {
        stoppedAt = key.startOffset;
        break listing;
      }
      doomed.push(obj.key);
      reached = key.startOffset;
    }
    if (listed.nextStartAfter === null) break;
    startAfter = listed.nextStartAfter;
  }
  if (doomed.length > 0) {
    budget.take(Math.ceil(doomed.length / 1000));
    const results = await deps.store.delete(doomed);
    const failed = results.filter((r) => r.error !== null);
    deps.metrics?.deletedObjects.inc({ reason: "watermark" }, results.length - failed.length);
    for (const f of failed) {
      const key = parseObjectKey(root, f.key);
      if (key.kind === "segment") stoppedAt = Math.min(stoppedAt ?? Infinity, key.startOffset);
    }
  }
  return { kind: "delete_below", partition: partitionKey, deletedBelow: stoppedAt ?? belowOffset };
}
