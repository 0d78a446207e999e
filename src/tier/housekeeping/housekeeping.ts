import { rethrowBug } from "../../runtime/assert.ts";
import type { HousekeepingConfig } from "../../config/config.ts";
import type { Partition } from "../../log/partition/partition.ts";
import type { DeadlineObjectStore } from "../../objectstore/retrying_object_store.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { Logger } from "../../runtime/logger.ts";
import { RequestBudget } from "./housekeeping_budget.ts";
import * as core from "./housekeeping_core.ts";
import { deleteBelowWatermark, deletePending } from "./housekeeping_deletes.ts";
import { uploadManifest } from "./housekeeping_manifests.ts";
import type { HousekeepingGaugeSource, HousekeepingMetrics } from "./housekeeping_metrics.ts";
import { type IncarnationSource, OrphanSweep } from "./housekeeping_orphan_sweep.ts";
import { verifyBelowFloor } from "./housekeeping_verify.ts";
import { incarnationId, incarnationOf } from "../bucket/object_keys.ts";
import type { UploadDeps } from "../upload/segment_uploader.ts";
import type { TopicFacts } from "../bucket/topic_manifest.ts";
import type { ReplaceRemoteSegments } from "../../log/segment/segment_replacement.ts";
import { mergePartition, type MergerDeps } from "../merge/segment_merger.ts";
import { ReplacedObjects, type ReplaceTakers } from "../merge/replaced_objects.ts";

export interface HousekeptPartition {
  key: string;
  partition: Partition;
  /** Untiered topics have no objects: housekeeping leaves them alone. Read at each use. */
  tiered(): boolean;
  /** Partition 0's topic's facts (a new object when they change), uploaded as the topic manifest. */
  topicFacts?(): TopicFacts | null;
}

/** What housekeeping reads of its shard's tier service, at each use. */
export interface HousekeptTier {
  /** The shard's tiered partitions. */
  partitions(): Iterable<HousekeptPartition>;
  /** How the verify pass uploads a missing object again from a local .log, with the uploads' own pacing. */
  readonly uploadDeps: UploadDeps;
  /** Commits a replace of remote segments (a merge) through the shard's control log, applied once it resolves. */
  submitReplace(command: ReplaceRemoteSegments): Promise<void>;
}

/** The shard's served requests: housekeeping's idle signal. */
export interface RequestCounter {
  /** Produce and poll requests the shard has served so far. */
  readonly requestsServed: number;
}

export interface HousekeepingDeps {
  clock: Clock;
  logger: Logger;
  store: DeadlineObjectStore;
  config: HousekeepingConfig & {
    prefix: string;
    clusterId: string;
    segmentUploadTimeoutMs: number;
  };
  /**
   * In a cluster, which replicas took each replace (merge): the objects it replaced are deleted only
   * once every one did (docs/DESIGN.md, "The adjacent-segment merger"). Absent on a single node.
   */
  replaceTakers?: ReplaceTakers;
  /**
   * Whether this shard sweeps the cluster's prefix for orphans: shard 0 of a single node; in a
   * cluster, shard 0 of the controller's node (a function, read at each tick).
   */
  sweepsOrphans: boolean | (() => boolean);
  /** The shard's tier service: its tiered partitions and what a re-upload needs. */
  tier: HousekeptTier;
  /** The shard's served requests. */
  requests: RequestCounter;
  /** Every partition of the cluster, for the orphan sweep; its table is read after each listing page. */
  incarnations: IncarnationSource;
  metrics?: HousekeepingMetrics;
}

/** How often the core looks at the shard (the idle clock samples at this rate). */
const observeIntervalMs = 1000;

/**
 * Longest time between two rounds of looks at the shard's partitions. A round is never further apart
 * than the run interval or the idle timeout either, so that a run plans from what a round found
 * since the last one.
 */
const lookRoundIntervalMaxMs = 10_000;

/** Bound on the partitions one tick looks at for housekeeping; a larger shard's round takes more ticks. */
const looksPerTickMax = 128;

interface SeenPartition {
  createdRevision: string;
  purgeGeneration: number;
  floor: number;
  deletedUpToOffset: number;
  /** Partition 0's topic facts as last seen, and how many times they changed (0: none kept). */
  topicFacts: TopicFacts | null;
  topicVersion: number;
  round: number;
}

/**
 * One shard's housekeeping: the shell around `housekeeping_core.ts`. Driven from the tick, it
 * observes the shard once a second and runs the jobs the core plans, spending at most
 * `request_quota` requests per run: deleting objects below retention watermarks (never younger than
 * `delete_grace`), uploading manifests, verifying keys below the floor (re-uploading from a local
 * `.log` when one is missing) and, on shard 0, sweeping the cluster's prefix for orphans. Each job
 * is its own file (`housekeeping_deletes.ts`, `housekeeping_manifests.ts`, `housekeeping_verify.ts`,
 * `housekeeping_orphan_sweep.ts`); a run's quota is a `RequestBudget`.
 */
export class Housekeeping implements HousekeepingGaugeSource {
  readonly #deps: HousekeepingDeps;
  readonly #orphanSweep: OrphanSweep;
  /** The objects merges replaced, found and waiting for their grace. */
  readonly #replaced = new ReplacedObjects();
  #state: core.HousekeepingState;
  #lastObservedMs = -Infinity;
  /** What the last look saw of each tiered partition, and in which look (`#lookRound`) it was seen. */
  readonly #seen = new Map<string, SeenPartition>();
  #lookRound = 0;
  /** The round of looks under way: the partitions as it began, and how far it got. */
  #round: HousekeptPartition[] = [];
  #roundCursor = 0;
  #roundStartedMs = -Infinity;
  /** What the looks found since the core was last told: a changed view, or null for one gone. */
  readonly #found = new Map<string, core.PartitionView | null>();
  #running: Promise<void> | null = null;
  #budget: RequestBudget | null = null;
  #stopped = false;
  readonly #lookRoundIntervalMs: number;

  constructor(deps: HousekeepingDeps) {
    this.#deps = deps;
    this.#lookRoundIntervalMs = Math.max(
      observeIntervalMs,
      Math.min(lookRoundIntervalMaxMs, deps.config.intervalMs, deps.config.idleTimeoutMs),
    );
    this.#orphanSweep = new OrphanSweep(deps);
    const c = deps.config;
    this.#state = core.initialHousekeeping({
      intervalMs: c.intervalMs,
      idleTimeoutMs: c.idleTimeoutMs,
      idleThresholdRps: c.idleThresholdRps,
      deleteGraceMs: c.deleteGraceMs,
      deleteBatchPerPass: c.deleteBatchPerPass,
      deletePendingPerPartitionMax: c.deletePendingPerPartitionMax,
      orphanSweepIntervalMs: c.orphanSweepIntervalMs,
      manifestUploadIntervalMs: c.manifestUploadIntervalMs,
      verifyIntervalMs: c.verifyIntervalMs,
      sweepsOrphans: this.#sweepsOrphans(),
      mergeIntervalMs: c.mergeSegments ? c.mergeIntervalMs : null,
    }, deps.clock.nowMs());
    deps.metrics?.addSource(this);
  }

  #sweepsOrphans(): boolean {
    const sweeps = this.#deps.sweepsOrphans;
    return typeof sweeps === "function" ? sweeps() : sweeps;
  }

  /** Keys listed for deletion and queued for later runs, over the shard's partitions. */
  pendingDeletions(): number {
    return this.#state.pendingDeletionsTotal;
  }

  get state(): core.HousekeepingState {
    return this.#state;
  }

  /** Resolves when the run in progress, if any, has ended (for tests). */
  idle(): Promise<void> {
    return this.#running ?? Promise.resolve();
  }

  /** Shutdown: no new run starts, the current one ends after the request in flight. */
  stop(): Promise<void> {
    this.#stopped = true;
    this.#deps.metrics?.removeSource(this);
    this.#budget?.exhaust();
    return this.idle();
  }

  /**
   * Each tick looks at a share of the tiered partitions (a round of looks over all of them starts
   * every `#lookRoundIntervalMs`, at most `looksPerTickMax` per tick); once a second the core is told
   * what the looks found changed, and samples the shard's request count.
   */
  onTick(nowMs: number): void {
    if (this.#stopped) return;
    const sweepsOrphans = this.#sweepsOrphans();
    if (sweepsOrphans !== this.#state.config.sweepsOrphans) {
      // The controller's seat moved: the plan looks again now, under the new assignment.
      this.#state = { ...this.#state, config: { ...this.#state.config, sweepsOrphans }, planAtMs: nowMs };
    }
    this.#lookAtShare(nowMs);
    if (nowMs - this.#lastObservedMs < observeIntervalMs) return;
    this.#lastObservedMs = nowMs;
    const changed: core.PartitionView[] = [];
    const removed: string[] = [];
    for (const [key, view] of this.#found) view === null ? removed.push(key) : changed.push(view);
    this.#found.clear();
    const step = core.observeChanges(
      this.#state,
      { changed, removed, requestCount: this.#deps.requests.requestsServed },
      nowMs,
    );
    this.#state = step.state;
    for (const effect of step.effects) this.#running = this.#run(effect.jobs);
  }

  /** This tick's share of the round of looks, starting a round an interval after the last began. */
  #lookAtShare(nowMs: number): void {
    if (this.#roundCursor >= this.#round.length) {
      if (nowMs - this.#roundStartedMs < this.#lookRoundIntervalMs) return;
      this.#round = [...this.#deps.tier.partitions()];
      this.#roundCursor = 0;
      this.#roundStartedMs = nowMs;
      this.#lookRound++;
    }
    const end = Math.min(this.#round.length, this.#roundCursor + looksPerTickMax);
    for (; this.#roundCursor < end; this.#roundCursor++) this.#look(this.#round[this.#roundCursor]!);
    if (this.#roundCursor < this.#round.length) return;
    // A partition the round did not find tiered is gone for housekeeping.
    for (const [key, seen] of this.#seen) {
      if (seen.round === this.#lookRound) continue;
      this.#found.set(key, null);
      this.#seen.delete(key);
    }
  }

  /**
   * Notes a tiered partition whose incarnation, floor, watermark or topic facts moved since its last
   * look. An unchanged one costs a few comparisons and no allocation.
   */
  #look(p: HousekeptPartition): void {
    if (!p.tiered()) return;
    const sb = p.partition.superblock;
    const facts = p.topicFacts?.() ?? null;
    let seen = this.#seen.get(p.key);
    if (
      seen === undefined || seen.createdRevision !== sb.createdRevision ||
      seen.purgeGeneration !== sb.purgeGeneration || seen.floor !== sb.tieredUpToOffset ||
      seen.deletedUpToOffset !== sb.deletedUpToOffset || seen.topicFacts !== facts
    ) {
      const topicVersion = facts === null
        ? 0
        : (seen?.topicVersion ?? 0) + (seen?.topicFacts === facts ? 0 : 1);
      seen = {
        createdRevision: sb.createdRevision,
        purgeGeneration: sb.purgeGeneration,
        floor: sb.tieredUpToOffset,
        deletedUpToOffset: sb.deletedUpToOffset,
        topicFacts: facts,
        topicVersion,
        round: this.#lookRound,
      };
      this.#seen.set(p.key, seen);
      this.#found.set(p.key, {
        key: p.key,
        incarnation: `${sb.createdRevision}-${sb.purgeGeneration}`,
        floor: sb.tieredUpToOffset,
        deletedUpToOffset: sb.deletedUpToOffset,
        topicVersion,
      });
    }
    seen.round = this.#lookRound;
  }

  async #run(jobs: core.HousekeepingJob[]): Promise<void> {
    this.#deps.metrics?.runs.inc();
    const budget = new RequestBudget(this.#deps.config.requestsPerRunMax, this.#deps.metrics);
    this.#budget = budget;
    const outcomes: core.JobOutcome[] = [];
    for (const job of jobs) {
      if (budget.left === 0) break;
      try {
        const outcome = await this.#job(job, budget);
        if (outcome !== null) outcomes.push(outcome);
      } catch (error) {
        rethrowBug(error, this.#deps.logger, "a housekeeping job threw; the process stops", {
          job: job.kind,
        });
        this.#deps.metrics?.failures.inc({ job: job.kind });
        this.#deps.logger.warn("housekeeping job failed; it is retried next run", { job: job.kind, error });
      }
    }
    this.#state = core.runFinished(this.#state, { outcomes }, this.#deps.clock.nowMs()).state;
    this.#running = null;
    this.#budget = null;
  }

  #job(job: core.HousekeepingJob, budget: RequestBudget): Promise<core.JobOutcome | null> {
    if (job.kind === "orphan_sweep") return this.#orphanSweep.run(job.startAfter, budget);
    if (job.kind === "merge") return this.#merge(budget);
    const p = [...this.#deps.tier.partitions()].find((x) => x.key === job.partition);
    if (p === undefined) return Promise.resolve(null);
    const inc = incarnationOf(this.#deps.config.prefix, this.#deps.config.clusterId, p.partition);
    switch (job.kind) {
      case "delete_below":
        return deleteBelowWatermark(this.#deps, inc, job, budget);
      case "delete_pending":
        return deletePending(this.#deps, inc, job, budget);
      case "upload_manifest": {
        const seen = this.#seen.get(p.key);
        const topic = seen?.topicFacts == null
          ? null
          : { facts: seen.topicFacts, version: seen.topicVersion };
        return uploadManifest(this.#deps, p.key, p.partition, inc, budget, topic);
      }
      case "verify": {
        const deps = { ...this.#deps, upload: this.#deps.tier.uploadDeps };
        return verifyBelowFloor(deps, p.key, p.partition, inc, job.fromOffset, budget);
      }
    }
  }

  /**
   * The merge job: first the objects merges replaced whose grace has passed are deleted
   * (`ReplacedObjects`), then the first partition with a run of small remote segments merges it;
   * one merge a run. An anomaly (an object not as its marker says) is reported and the next
   * partition tried.
   */
  async #merge(budget: RequestBudget): Promise<core.JobOutcome> {
    await this.#deleteReplaced(budget);
    const { config, logger, metrics } = this.#deps;
    const deps: MergerDeps = {
      ...this.#deps,
      disk: this.#deps.tier.uploadDeps.disk,
      upload: this.#deps.tier.uploadDeps,
      submitReplace: (command) => this.#deps.tier.submitReplace(command),
      mergeTimeoutMs: 4 * config.segmentUploadTimeoutMs,
    };
    for (const p of this.#deps.tier.partitions()) {
      if (!p.tiered() || budget.left === 0) continue;
      const log = p.partition.log.config;
      const inc = incarnationOf(config.prefix, config.clusterId, p.partition);
      const limits = { targetBytes: log.segmentSizeBytes, indexIntervalBytes: log.indexIntervalBytes };
      const outcome = await mergePartition(deps, p.partition, inc, { ...limits, requestsLeft: budget.left });
      if (outcome.kind === "none") continue;
      if (outcome.kind === "anomaly") {
        metrics?.merges.inc({ outcome: "anomaly" });
        logger.error("merge anomaly: an object is not what its marker says; nothing replaced", {
          partition: p.key,
          detail: outcome.detail,
        });
        continue;
      }
      budget.take(outcome.segments + 2);
      metrics?.merges.inc({ outcome: "merged" });
      metrics?.mergedBytes.inc(outcome.sizeBytes);
      return { kind: "merge", more: true, partition: p.key };
    }
    return { kind: "merge", more: false, partition: null };
  }

  /**
   * Deletes what merges replaced, partition by partition, within the run's budget: only where the
   * partition's manifest went up since its last merge, so that a read replica of it, which learns of
   * merges from the manifest, takes a merge within the grace before the objects it replaced go.
   */
  async #deleteReplaced(budget: RequestBudget): Promise<void> {
    const { config, metrics } = this.#deps;
    const deps = {
      ...this.#deps,
      deleteGraceMs: config.deleteGraceMs,
      deleted: (count: number) => metrics?.deletedObjects.inc({ reason: "replaced" }, count),
      ...(this.#deps.replaceTakers !== undefined ? { takers: this.#deps.replaceTakers } : {}),
    };
    const referenced = this.#deps.incarnations.incarnationTable().referenced;
    for (const p of this.#deps.tier.partitions()) {
      if (!p.tiered() || budget.left === 0) continue;
      const sb = p.partition.superblock;
      // A restored topic's markers may name this incarnation's replaced objects: they stay.
      if (referenced?.has(incarnationId(p.partition.address, sb.createdRevision, sb.purgeGeneration))) {
        continue;
      }
      const record = this.#state.partitions.get(p.key);
      if (record === undefined || record.manifestOf !== core.manifestDescribes(record)) continue;
      const inc = incarnationOf(config.prefix, config.clusterId, p.partition);
      await this.#replaced.sweep(deps, p.partition, inc, budget);
    }
  }
}
