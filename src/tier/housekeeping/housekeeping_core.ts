import { assert } from "../../runtime/assert.ts";
import { PersistentMap } from "../../runtime/persistent_map.ts";
import { type PendingDeletion, settleDeletions } from "./housekeeping_deletes.ts";

/**
 * When housekeeping runs and what it does, as a pure core: `(state, event, nowMs) → {state,
 * effects}`. A shard runs housekeeping when its request rate has stayed below `idleThresholdRps`
 * for `idleTimeoutMs` and there is work, or at least once per `intervalMs` (docs/DESIGN.md,
 * "Housekeeping"). One run at a time; the shell spends at most `request_quota` requests on the
 * jobs of a run, in the order planned, and reports what each job finished.
 *
 * Deletion is two-phase: a partition's retention watermark is remembered with the time it was
 * first seen, and objects below it become deletable only `deleteGraceMs` later (the shell also
 * skips any object younger than the grace). A deletion listing deletes one batch at once and
 * queues what else it found for later runs, at most `deletePendingPerPartitionMax` keys
 * (`housekeeping_deletes.ts`); a partition with keys queued deletes a batch of them before it lists
 * again. A purge or a recreated partition is a new incarnation: its state starts over.
 */

export interface HousekeepingCoreConfig {
  intervalMs: number;
  idleTimeoutMs: number;
  idleThresholdRps: number;
  deleteGraceMs: number;
  /** Keys one run deletes at most per partition. */
  deleteBatchPerPass: number;
  /** Keys listed for deletion and queued for later runs, at most, per partition. */
  deletePendingPerPartitionMax: number;
  orphanSweepIntervalMs: number;
  manifestUploadIntervalMs: number;
  verifyIntervalMs: number;
  /** Only one shard (0) sweeps the cluster's prefix for orphans. */
  sweepsOrphans: boolean;
  /**
   * How long an idle shard waits to look for remote segments to merge again after a look found
   * none (`merge_interval`); null: the merger is off (`merge_segments`, and always in a cluster).
   */
  mergeIntervalMs: number | null;
}

/** What the shell sees of a partition at each observation. */
export interface PartitionView {
  key: string;
  /** `{revision}-{generation}`: a change means a new incarnation. */
  incarnation: string;
  floor: number;
  deletedUpToOffset: number;
  /**
   * How many times partition 0 has seen its topic's facts change (its manifest job uploads the
   * topic manifest too); 0 for every other partition.
   */
  topicVersion: number;
}

interface Watermark {
  offset: number;
  seenAtMs: number;
}

export interface PartitionHousekeeping {
  incarnation: string;
  floor: number;
  deletedUpToOffset: number;
  /** Watermarks not yet eligible (plus the newest eligible one), oldest first, at most `watermarksMax`. */
  watermarks: Watermark[];
  /** Every object of this incarnation that starts below this offset is deleted. */
  deletedBelow: number;
  /** Every object of this incarnation that starts below this offset is deleted or pending. */
  listedBelow: number;
  /** Objects listed below the eligible watermark, queued for deletion; at most the cap. */
  pendingDeletions: readonly PendingDeletion[];
  /** Partition 0's count of its topic's changes; 0 for the others (`PartitionView`). */
  topicVersion: number;
  /** What the last uploaded manifest described (`manifestDescribes`), null before the first. */
  manifestOf: string | null;
  manifestAtMs: number;
  verifiedAtMs: number;
  /** Where an unfinished verify pass goes on. */
  verifyFrom: number;
}

export interface HousekeepingState {
  config: HousekeepingCoreConfig;
  /** One record per partition; a change copies about 1/256 of them (`PersistentMap`). */
  partitions: PersistentMap<PartitionHousekeeping>;
  /** Gauge: the pending deletions queued over every partition, kept with each change of a record. */
  pendingDeletionsTotal: number;
  /**
   * No plan looks at the partitions before this (clock ms): when a plan found nothing, the earliest a
   * job can come due; any change of a partition or a run's end brings it back to now.
   */
  planAtMs: number;
  running: boolean;
  lastRunMs: number;
  /** Last time the request rate was at or above the threshold. */
  busyAtMs: number;
  rateSampleAtMs: number;
  rateSampleCount: number;
  sweptAtMs: number;
  /** Where an unfinished orphan sweep goes on; null starts from the beginning. */
  sweepAfter: string | null;
  /** No merge job is planned before this (clock ms); a merge that found work brings it to now. */
  mergeAtMs: number;
}

export type HousekeepingJob =
  | {
    kind: "delete_below";
    partition: string;
    incarnation: string;
    fromOffset: number;
    belowOffset: number;
    /** Keys the listing queues at most beyond the batch it deletes. */
    pendingMax: number;
  }
  | { kind: "delete_pending"; partition: string; incarnation: string; keys: readonly PendingDeletion[] }
  | { kind: "upload_manifest"; partition: string; describes: string }
  | { kind: "verify"; partition: string; fromOffset: number }
  | { kind: "orphan_sweep"; startAfter: string | null }
  /** Merges remote segments (docs/DESIGN.md, "The adjacent-segment merger"): only in an idle run. */
  | { kind: "merge" };

export type HousekeepingEffect = { kind: "run"; jobs: HousekeepingJob[] };

/** What a job finished; a job that failed reports nothing and is planned again. */
export type JobOutcome =
  | {
    kind: "delete_below";
    partition: string;
    incarnation: string;
    /** Where the listing stopped: every object of a segment below it was deleted or is in `pending`. */
    listedBelow: number;
    pending: readonly PendingDeletion[];
    failedFromOffset: number | null;
  }
  | {
    kind: "delete_pending";
    partition: string;
    incarnation: string;
    /** Keys taken from the front of the queue, deleted unless at or past `failedFromOffset`. */
    taken: number;
    failedFromOffset: number | null;
  }
  | { kind: "upload_manifest"; partition: string; describes: string }
  | { kind: "verify"; partition: string; nextFrom: number | null }
  | { kind: "orphan_sweep"; nextAfter: string | null }
  /**
   * `more`: it merged (in `partition`, whose manifest is then out of date), and the shard may hold
   * more to merge; false: it found nothing.
   */
  | { kind: "merge"; more: boolean; partition: string | null };

export interface HousekeepingStep {
  state: HousekeepingState;
  effects: HousekeepingEffect[];
}

export const watermarksMax = 64;
const rateSampleMs = 1000;

export function initialHousekeeping(config: HousekeepingCoreConfig, nowMs: number): HousekeepingState {
  return {
    config,
    partitions: PersistentMap.empty(),
    pendingDeletionsTotal: 0,
    planAtMs: nowMs,
    running: false,
    lastRunMs: nowMs,
    busyAtMs: nowMs,
    rateSampleAtMs: nowMs,
    rateSampleCount: 0,
    sweptAtMs: nowMs,
    sweepAfter: null,
    mergeAtMs: nowMs,
  };
}

/**
 * The shard's partitions, observed periodically, and its running request count: told only what
 * changed since the last observation (the views of partitions that joined or whose incarnation,
 * floor or watermark moved, and the keys of those that left), it updates each partition's
 * watermarks and the idle clock, and starts a run when one is due and there is work. An idle
 * shard's observation costs nothing per partition, and a plan runs only when a job can be due.
 */
export function observeChanges(
  state: HousekeepingState,
  event: { changed: readonly PartitionView[]; removed: readonly string[]; requestCount: number },
  nowMs: number,
): HousekeepingStep {
  let records = { partitions: state.partitions, pendingDeletionsTotal: state.pendingDeletionsTotal };
  for (const key of event.removed) records = withRecord(records, key, undefined);
  for (const view of event.changed) {
    const p = observePartition(records.partitions.get(view.key), view, nowMs, state.config.deleteGraceMs);
    records = withRecord(records, view.key, p);
  }
  const moved = event.changed.length > 0 || event.removed.length > 0;
  let next: HousekeepingState = {
    ...state,
    ...records,
    planAtMs: moved ? nowMs : state.planAtMs,
    ...sampleRate(state, event.requestCount, nowMs),
  };
  if (next.running) return { state: next, effects: [] };
  const idle = nowMs - next.busyAtMs >= next.config.idleTimeoutMs &&
    nowMs - next.lastRunMs >= next.config.idleTimeoutMs;
  const due = nowMs - next.lastRunMs >= next.config.intervalMs;
  if (!idle && !due) return { state: next, effects: [] };
  const jobs = nowMs < next.planAtMs ? [] : plan(next, nowMs, idle);
  if (jobs.length === 0) {
    // Nothing to do: the interval starts again, so an idle shard does not plan every second.
    const planAtMs = nowMs < next.planAtMs ? next.planAtMs : nextPlanAtMs(next, nowMs);
    return { state: { ...next, planAtMs, lastRunMs: due ? nowMs : next.lastRunMs }, effects: [] };
  }
  next = { ...next, running: true, lastRunMs: nowMs };
  return { state: next, effects: [{ kind: "run", jobs }] };
}

/** A run ended: each finished job moves its cursor. */
export function runFinished(
  state: HousekeepingState,
  event: { outcomes: readonly JobOutcome[] },
  nowMs: number,
): HousekeepingStep {
  assert(state.running, "housekeeping finished a run it did not start");
  let records = { partitions: state.partitions, pendingDeletionsTotal: state.pendingDeletionsTotal };
  let next: HousekeepingState = { ...state, running: false, planAtMs: nowMs };
  for (const o of event.outcomes) {
    if (o.kind === "merge") {
      const interval = state.config.mergeIntervalMs ?? 0;
      next = { ...next, mergeAtMs: o.more ? nowMs : nowMs + interval };
      const merged = o.partition === null ? undefined : records.partitions.get(o.partition);
      // The manifest describes the chain: a merge changed it, so it goes up again.
      if (merged !== undefined) records = withRecord(records, o.partition!, { ...merged, manifestOf: null });
      continue;
    }
    if (o.kind === "orphan_sweep") {
      next = o.nextAfter === null
        ? { ...next, sweptAtMs: nowMs, sweepAfter: null }
        : { ...next, sweepAfter: o.nextAfter };
      continue;
    }
    const p = records.partitions.get(o.partition);
    if (p === undefined) continue;
    records = withRecord(
      records,
      o.partition,
      applyOutcome(p, o, nowMs, state.config.deletePendingPerPartitionMax),
    );
  }
  return { state: { ...next, ...records }, effects: [] };
}

type Records = Pick<HousekeepingState, "partitions" | "pendingDeletionsTotal">;

/** The records with `key`'s set to `record` (removed when undefined), the pending total kept. */
function withRecord(records: Records, key: string, record: PartitionHousekeeping | undefined): Records {
  const before = records.partitions.get(key)?.pendingDeletions.length ?? 0;
  const after = record?.pendingDeletions.length ?? 0;
  const pendingDeletionsTotal = records.pendingDeletionsTotal - before + after;
  assert(pendingDeletionsTotal >= 0, "the pending deletions cannot go below 0");
  const partitions = record === undefined
    ? records.partitions.without(key)
    : records.partitions.with(key, record);
  return { partitions, pendingDeletionsTotal };
}

function observePartition(
  previous: PartitionHousekeeping | undefined,
  view: PartitionView,
  nowMs: number,
  deleteGraceMs: number,
): PartitionHousekeeping {
  const p = previous === undefined || previous.incarnation !== view.incarnation ? fresh(view, nowMs) : {
    ...previous,
    floor: view.floor,
    topicVersion: view.topicVersion,
    watermarks: pruned(previous.watermarks, nowMs, deleteGraceMs),
  };
  if (view.deletedUpToOffset <= (p.watermarks.at(-1)?.offset ?? 0)) {
    return { ...p, deletedUpToOffset: view.deletedUpToOffset };
  }
  const watermarks = [...p.watermarks, { offset: view.deletedUpToOffset, seenAtMs: nowMs }];
  // Over the bound, the second newest goes: its offsets then wait for the newest, later, never sooner.
  if (watermarks.length > watermarksMax) watermarks.splice(watermarks.length - 2, 1);
  return { ...p, deletedUpToOffset: view.deletedUpToOffset, watermarks };
}

/** Entries older than the newest eligible one say nothing more: they go. */
function pruned(watermarks: Watermark[], nowMs: number, deleteGraceMs: number): Watermark[] {
  let lastEligible = -1;
  watermarks.forEach((w, i) => {
    if (nowMs - w.seenAtMs >= deleteGraceMs) lastEligible = i;
  });
  return lastEligible <= 0 ? watermarks : watermarks.slice(lastEligible);
}

function fresh(view: PartitionView, nowMs: number): PartitionHousekeeping {
  return {
    incarnation: view.incarnation,
    floor: view.floor,
    topicVersion: view.topicVersion,
    deletedUpToOffset: 0,
    watermarks: [],
    deletedBelow: 0,
    listedBelow: 0,
    pendingDeletions: [],
    manifestOf: null,
    manifestAtMs: -Infinity,
    // A verify pass after a restart waits one interval: booting must not HEAD every key at once.
    verifiedAtMs: nowMs,
    verifyFrom: 0,
  };
}

function sampleRate(state: HousekeepingState, requestCount: number, nowMs: number) {
  const elapsedMs = nowMs - state.rateSampleAtMs;
  if (elapsedMs < rateSampleMs) return {};
  const rps = ((requestCount - state.rateSampleCount) * 1000) / elapsedMs;
  return {
    rateSampleAtMs: nowMs,
    rateSampleCount: requestCount,
    busyAtMs: rps >= state.config.idleThresholdRps ? nowMs : state.busyAtMs,
  };
}

function applyOutcome(
  p: PartitionHousekeeping,
  o: Exclude<JobOutcome, { kind: "orphan_sweep" | "merge" }>,
  nowMs: number,
  pendingMax: number,
): PartitionHousekeeping {
  switch (o.kind) {
    case "delete_below":
    case "delete_pending": {
      // A job of an incarnation that is gone says nothing about this one.
      if (o.incarnation !== p.incarnation) return p;
      const listing = o.kind === "delete_below";
      const settled = settleDeletions(
        { deletedBelow: p.deletedBelow, listedBelow: p.listedBelow, pending: p.pendingDeletions },
        {
          listedBelow: listing ? o.listedBelow : null,
          pending: listing ? o.pending : [],
          takenFromQueue: listing ? 0 : o.taken,
          failedFromOffset: o.failedFromOffset,
        },
        pendingMax,
      );
      return {
        ...p,
        deletedBelow: settled.deletedBelow,
        listedBelow: settled.listedBelow,
        pendingDeletions: settled.pending,
      };
    }
    case "upload_manifest":
      return { ...p, manifestOf: o.describes, manifestAtMs: nowMs };
    case "verify":
      return o.nextFrom === null
        ? { ...p, verifiedAtMs: nowMs, verifyFrom: 0 }
        : { ...p, verifyFrom: o.nextFrom };
  }
}

/** What a housekeeping run does (`plan`), and when a plan can next find something (`nextPlanAtMs`). */

/** The earliest time (clock ms) a plan can find a job, when one at `nowMs` found none. */
export function nextPlanAtMs(state: HousekeepingState, nowMs: number): number {
  const c = state.config;
  let atMs = c.sweepsOrphans ? state.sweptAtMs + c.orphanSweepIntervalMs : Infinity;
  if (c.mergeIntervalMs !== null && state.partitions.size > 0) atMs = Math.min(atMs, state.mergeAtMs);
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

/**
 * Deletions first (they free storage), then manifests, the orphan sweep, verify passes and, in a
 * run that starts because the shard is idle, merges.
 */
export function plan(state: HousekeepingState, nowMs: number, idle: boolean): HousekeepingJob[] {
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
  const merge: HousekeepingJob[] = idle && c.mergeIntervalMs !== null && state.partitions.size > 0 &&
      nowMs >= state.mergeAtMs
    ? [{ kind: "merge" }]
    : [];
  return [...deletes, ...manifests, ...sweep, ...verifies, ...merge];
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
