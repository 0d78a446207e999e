import type {
  HousekeepingCoreConfig,
  HousekeepingJob,
  HousekeepingState,
  PartitionHousekeeping,
} from "./housekeeping_core.ts";

/** What a housekeeping run does (`plan`), and when a plan can next find something (`nextPlanAtMs`). */

/** The earliest time (clock ms) a plan can find a job, when one at `nowMs` found none. */
export function nextPlanAtMs(state: HousekeepingState, nowMs: number): number {
  const c = state.config;
  let atMs = c.sweepsOrphans ? state.sweptAtMs + c.orphanSweepIntervalMs : Infinity;
  for (const p of state.partitions.values()) {
    for (const w of p.watermarks) {
      if (w.offset > p.listedBelow) atMs = Math.min(atMs, w.seenAtMs + c.deleteGraceMs);
    }
    if (p.floor === 0) continue;
    if (manifestDescribes(p) !== p.manifestOf) {
      atMs = Math.min(atMs, p.manifestAtMs + c.manifestUploadIntervalMs);
    }
    atMs = Math.min(atMs, p.verifiedAtMs + c.verifyIntervalMs);
  }
  // A plan that found nothing at `nowMs` finds nothing before the next observation.
  return Math.max(atMs, nowMs + 1);
}

/** Deletions first (they free storage), then manifests, the orphan sweep, and verify passes. */
export function plan(state: HousekeepingState, nowMs: number): HousekeepingJob[] {
  const c = state.config;
  const deletes: HousekeepingJob[] = [];
  const manifests: HousekeepingJob[] = [];
  const verifies: HousekeepingJob[] = [];
  for (const [key, p] of state.partitions) {
    const deletion = plannedDeletion(key, p, eligibleWatermark(p, nowMs, c.deleteGraceMs), c);
    if (deletion !== null) deletes.push(deletion);
    const describes = manifestDescribes(p);
    if (p.floor > 0 && describes !== p.manifestOf && nowMs - p.manifestAtMs >= c.manifestUploadIntervalMs) {
      manifests.push({ kind: "upload_manifest", partition: key, describes });
    }
    if (p.floor > 0 && nowMs - p.verifiedAtMs >= c.verifyIntervalMs) {
      verifies.push({ kind: "verify", partition: key, fromOffset: p.verifyFrom });
    }
  }
  const sweep: HousekeepingJob[] = c.sweepsOrphans &&
      (state.sweepAfter !== null || nowMs - state.sweptAtMs >= c.orphanSweepIntervalMs)
    ? [{ kind: "orphan_sweep", startAfter: state.sweepAfter }]
    : [];
  return [...deletes, ...manifests, ...sweep, ...verifies];
}

/**
 * What a manifest upload of the partition now would describe: its floor and watermark, and for
 * partition 0 the version of its topic's facts (a topic manifest goes up with it).
 */
export function manifestDescribes(
  p: Pick<PartitionHousekeeping, "floor" | "deletedUpToOffset" | "topicVersion">,
): string {
  const partition = `${p.floor}:${p.deletedUpToOffset}`;
  return p.topicVersion === 0 ? partition : `${partition}:t${p.topicVersion}`;
}

/** A batch of the queued keys when there are any, else a listing from the cursor when one is due. */
function plannedDeletion(
  key: string,
  p: PartitionHousekeeping,
  below: number,
  c: HousekeepingCoreConfig,
): HousekeepingJob | null {
  const incarnation = p.incarnation;
  if (p.pendingDeletions.length > 0) {
    const keys = p.pendingDeletions.slice(0, c.deleteBatchPerPass);
    return { kind: "delete_pending", partition: key, incarnation, keys };
  }
  if (below <= p.listedBelow) return null;
  const pendingMax = c.deletePendingPerPartitionMax;
  return {
    kind: "delete_below",
    partition: key,
    incarnation,
    fromOffset: p.listedBelow,
    belowOffset: below,
    pendingMax,
  };
}

/** The highest watermark seen at least `deleteGraceMs` ago, or 0. */
export function eligibleWatermark(p: PartitionHousekeeping, nowMs: number, deleteGraceMs: number): number {
  let eligible = 0;
  for (const w of p.watermarks) if (nowMs - w.seenAtMs >= deleteGraceMs) eligible = w.offset;
  return eligible;
}
