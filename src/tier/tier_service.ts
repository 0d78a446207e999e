import { rethrowBug } from "../runtime/assert.ts";
import type { LocalEnvelope } from "../log/retention/local_retention.ts";
import type { Partition } from "../log/partition/partition.ts";
import type { TopicFacts } from "./bucket/topic_manifest.ts";
import type { Clock } from "../runtime/clock/clock.ts";
import type { Logger } from "../runtime/logger.ts";
import type { Rng } from "../runtime/rng.ts";
import type { TokenBucket } from "../runtime/cooperation/token_bucket.ts";
import type { Disk } from "../runtime/disk/disk.ts";
import type { PieceGate } from "../runtime/cooperation/piece_gate.ts";
import type { DeadlineObjectStore } from "../objectstore/retrying_object_store.ts";
import type { RetryProfiles } from "../objectstore/retry_policy.ts";
import type { ControlLog } from "./control/control_log.ts";
import { FloorWaiters } from "./control/floor_waiters.ts";
import { EvictionLooks, LocalEvictions } from "./local_evictions.ts";
import { SealedScan } from "./upload/sealed_scan.ts";
import type { UploadDeps } from "./upload/segment_uploader.ts";
import * as core from "./upload/upload_core.ts";
import {
  floorRetriesWaiting,
  inFlightCount,
  initialState,
  stalledOffset,
  stalledPartitions,
  type Step,
  type UploadEffect,
  type UploadState,
} from "./upload/upload_state.ts";
import { type UploadReport, UploadRuns } from "./upload/upload_runs.ts";
import type { PartitionBytes, TierGaugeSource, TierMetrics } from "./tier_metrics.ts";
import { type TierLeadership, uploadTermChange } from "./tier_leadership.ts";
import { DeferredFloors } from "./control/deferred_floors.ts";
import { ReplicatedRetention } from "./replicated_retention.ts";
import { type SubmitFloor, submitFloorCommand } from "./control/floor_submission.ts";
import type { AdvanceTieredFloor } from "../log/retention/floor_state.ts";
import type { ReplaceRemoteSegments } from "../log/segment/segment_replacement.ts";
import { CommittedReplaces } from "./merge/replace_apply.ts";
import { mergeProgressOf } from "./merge/merge_plan.ts";

/** A partition as the tier service sees it: its log and superblock, and its topic's options. */
export interface TieredPartition {
  /** "{stream}/{topic}/{partition}" by id. */
  key: string;
  partition: Partition;
  /** Read at each use: topic options may change. */
  tiered(): boolean;
  /** The topic's local envelope, read at each use. */
  envelope(): LocalEnvelope;
  /**
   * Partition 0's topic's facts for the topic manifest, a new object only when they changed; null
   * (or absent) for other partitions and where no topic manifest is kept.
   */
  topicFacts?(): TopicFacts | null;
}

export interface TierServiceConfig {
  prefix: string;
  clusterId: string;
  uploadConcurrency: number;
  uploadPieceBytes: number;
  uploadLoopBackoffMaxMs: number;
  segmentUploadTimeoutMs: number;
  /** Uploads that fail or hang this long without the floor moving count as stalled. */
  uploadStallAfterMs: number;
  retry: RetryProfiles;
}

export interface TierServiceDeps {
  clock: Clock;
  rng: Rng;
  logger: Logger;
  disk: Disk;
  store: DeadlineObjectStore;
  bandwidth: TokenBucket;
  config: TierServiceConfig;
  metrics?: TierMetrics;
  /** The shard's piece gate, shared with the chunk cache. */
  pieceGate?: PieceGate;
  /** In a cluster, the partitions this node leads: only those upload. Absent: it leads every one. */
  leadership?: TierLeadership;
  /** In a cluster, told that this replica's chain took a committed replace (`CommittedReplacesDeps.taken`). */
  replaceTaken?(partition: string, startOffset: number): void;
}

/** Bound on `await` waiters per shard. */
const floorWaitersMax = 10_000;

/**
 * One shard's tier service: the imperative shell around the pure upload core. Driven from the
 * shard's tick: it feeds the core sealed segments (on seal, and from a scan that backs off from
 * 100 ms to `upload_loop_backoff_max` while it finds nothing), runs the effects the core returns
 * (uploads, floor commands to the control log, whose failures go back to the core), applies
 * committed floors to partitions, and runs local retention (eviction below the floor beyond each
 * topic's local envelope, and the pressure flag the core orders uploads by).
 */
export class TierService implements TierGaugeSource {
  readonly #deps: TierServiceDeps;
  #state: UploadState;
  readonly #partitions = new Map<string, TieredPartition>();
  readonly #scan: SealedScan;
  readonly #evictions: LocalEvictions;
  readonly #evictionLooks: EvictionLooks;
  /** Removes each partition's activity listener. */
  readonly #activityStops = new Map<string, () => void>();
  readonly #waiters: FloorWaiters;
  readonly #uploads: UploadRuns;
  /** The control log and the epoch this service submits under, once attached. */
  #control: { log: ControlLog; epoch: number } | null = null;
  /** The leader epoch each partition's uploads run under, for those this node uploads for. */
  readonly #terms = new Map<string, number>();
  /** In a cluster, the floors a follower could not apply yet (above its high watermark). */
  readonly #deferredFloors = new DeferredFloors();
  /** How committed replaces (merges) apply, and those a replica's chain cannot take yet. */
  readonly #replaces: CommittedReplaces;
  /** Total retention across replicas: decided by the leader, committed, applied everywhere. */
  readonly retention: ReplicatedRetention;

  constructor(deps: TierServiceDeps) {
    this.#deps = deps;
    deps.metrics?.addSource(this);
    this.#state = initialState({
      concurrencyMax: deps.config.uploadConcurrency,
      transferDeadlineMs: 4 * deps.config.segmentUploadTimeoutMs,
      profiles: deps.config.retry,
      pendingPerPartitionMax: 1000,
      stallAfterMs: deps.config.uploadStallAfterMs,
    });
    this.#scan = new SealedScan(() => deps.config.uploadLoopBackoffMaxMs);
    this.#evictions = new LocalEvictions(deps.clock, deps.logger);
    this.#evictionLooks = new EvictionLooks();
    this.#waiters = new FloorWaiters(deps.clock, floorWaitersMax);
    this.#uploads = new UploadRuns({
      ...deps,
      uploadDeps: () => this.uploadDeps,
      partition: (key) => this.#partitions.get(key),
      uploaded: (key, startOffset, logCrc32) => this.#evictions.noteUploaded(key, startOffset, logCrc32),
      report: (report) => this.#uploadReported(report),
    });
    this.#replaces = new CommittedReplaces({
      logger: deps.logger,
      ...(deps.metrics !== undefined ? { metrics: deps.metrics } : {}),
      partition: (key) => this.#partitions.get(key)?.partition,
      ...(deps.replaceTaken !== undefined ? { taken: deps.replaceTaken } : {}),
    });
    this.retention = new ReplicatedRetention({
      logger: deps.logger,
      clustered: deps.leadership !== undefined,
      partition: (key) => this.#partitions.get(key),
      termOf: (key) => this.#terms.get(key),
      control: () => this.#control?.log ?? null,
    });
    deps.leadership?.onChange((key) => this.#leadershipChanged(key));
  }

  /**
   * Takes the shard's control log once the partitions are added: replays it through the floor's
   * apply, which needs them, then submits floor commands to it under the epoch it is at.
   */
  async attachControlLog(log: ControlLog): Promise<void> {
    await log.replay((_index, command) => {
      switch (command.kind) {
        case "advance_tiered_floor":
          return this.#applyFloor(command);
        case "advance_deleted_up_to":
          return this.retention.apply(command);
        case "replace_remote_segments":
          return this.#replaces.apply(command);
      }
    });
    this.#control = { log, epoch: log.epoch() };
  }

  /**
   * Commits a replace of remote segments (a merge) through the control log and resolves once it is
   * applied here: on a single node under the log's epoch; in a cluster under the epoch this node
   * leads the partition in, so that a deposed leader's merge is never committed (docs/DESIGN.md,
   * "The adjacent-segment merger").
   */
  async submitReplace(command: ReplaceRemoteSegments): Promise<void> {
    const control = this.#control;
    if (control === null) throw new Error("Cannot commit a replace of remote segments: no control log yet");
    const epoch = this.#deps.leadership === undefined ? control.epoch : this.#terms.get(command.partition);
    if (epoch === undefined) {
      throw new Error(
        `Cannot commit a replace of remote segments of ${command.partition}: this node no longer leads it`,
      );
    }
    await control.log.submit(command, { expectedEpoch: epoch });
  }

  uploadsInFlight(): number {
    return inFlightCount(this.#state);
  }

  /** Uploads of partitions removed or purged meanwhile, still in flight until they report. */
  orphanedUploads(): number {
    return this.#state.orphans.size;
  }

  stalledOffset(): number | null {
    return stalledOffset(this.#state, this.#deps.clock.nowMs());
  }

  stalledPartitions(): number {
    return stalledPartitions(this.#state, this.#deps.clock.nowMs());
  }

  floorRetriesWaiting(): number {
    return floorRetriesWaiting(this.#state);
  }

  replacesWaiting(): number {
    return this.#replaces.waiting;
  }

  /** The sum of each partition's overshoot as its last eviction look found it (within a second). */
  localOvershootBytes(): number {
    return this.#evictionLooks.overshootTotalBytes;
  }

  /** Each partition's bytes with a local `.log`, bytes only in the store, and its remote indexes held. */
  *partitionBytes(): Iterable<[string, PartitionBytes]> {
    for (const [key, p] of this.#partitions) {
      const log = p.partition.log;
      yield [key, {
        localBytes: log.localSizeBytes,
        remoteBytes: log.remoteSizeBytes,
        remoteSegments: log.remoteSegments,
        indexCacheBytes: log.remoteIndexBytes,
        ...mergeProgressOf(log.segments, log.config.segmentSizeBytes),
      }];
    }
  }

  *floors(): Iterable<[string, number]> {
    for (const [key, p] of this.#partitions) yield [key, p.partition.superblock.tieredUpToOffset];
  }

  /** The partitions this shard tiers and leads (on a single node, all), for housekeeping. */
  *partitions(): Iterable<TieredPartition> {
    for (const [key, p] of this.#partitions) if (this.#terms.has(key)) yield p;
  }

  /** What an upload needs, shared with the verify pass's re-uploads (same pacing). */
  get uploadDeps(): UploadDeps {
    return {
      disk: this.#deps.disk,
      store: this.#deps.store,
      pieceBytes: this.#deps.config.uploadPieceBytes,
      bandwidth: this.#deps.bandwidth,
      ...(this.#deps.pieceGate !== undefined ? { gate: this.#deps.pieceGate } : {}),
    };
  }

  /** The state the core holds, for gauges and tests. */
  get state(): UploadState {
    return this.#state;
  }

  addPartition(p: TieredPartition): void {
    this.#partitions.set(p.key, p);
    p.partition.log.holdProducerSnapshotsAbove(p.partition.superblock.tieredUpToOffset);
    this.#evictionLooks.add(p.key, this.#now());
    this.#activityStops.get(p.key)?.();
    this.#activityStops.set(
      p.key,
      p.partition.log.onActivity("tier", () => {
        this.#scan.touch(p.key);
        this.#evictionLooks.touch(p.key);
      }),
    );
    this.#scan.add(p.key, this.#now());
    this.#leadershipChanged(p.key);
    if (this.#control !== null) this.#replaces.applyCommittedTo(this.#control.log, p.key);
  }

  /** Starts or ends the partition's upload term as its leadership here changed (always led alone). */
  #leadershipChanged(key: string): void {
    const p = this.#partitions.get(key);
    if (p === undefined) return;
    const leadership = this.#deps.leadership;
    const change = uploadTermChange(
      this.#terms.get(key),
      leadership === undefined ? 0 : leadership.epochOf(key),
    );
    if (change.close) {
      this.#terms.delete(key);
      this.#step(core.partitionClosed(this.#state, { partition: key }, this.#now()));
    }
    if (change.open === null) return;
    this.#terms.set(key, change.open);
    const { purgeGeneration, tieredUpToOffset } = p.partition.superblock;
    const opened = {
      partition: key,
      generation: purgeGeneration,
      floor: tieredUpToOffset,
      term: change.open,
    };
    this.#step(core.partitionOpened(this.#state, opened, this.#now()));
    this.#scan.due(key, this.#now());
  }

  removePartition(key: string): void {
    this.#partitions.delete(key);
    this.#evictionLooks.remove(key);
    this.#activityStops.get(key)?.();
    this.#activityStops.delete(key);
    this.#scan.forget(key);
    this.#evictions.forget(key);
    this.#terms.delete(key);
    this.#deferredFloors.forget(key);
    this.#replaces.forget(key);
    this.retention.forget(key);
    this.#step(core.partitionClosed(this.#state, { partition: key }, this.#now()));
  }

  /** A purge bumped the partition's generation: the core starts over for it. */
  purged(key: string): void {
    const p = this.#partitions.get(key);
    if (p === undefined) return;
    this.#evictions.forget(key);
    p.partition.log.holdProducerSnapshotsAbove(p.partition.superblock.tieredUpToOffset);
    this.#step(
      core.purged(
        this.#state,
        { partition: key, generation: p.partition.superblock.purgeGeneration },
        this.#now(),
      ),
    );
    this.#waiters.wake(key, 0);
  }

  /** Resolves true once every offset below `offset` is in the store, false after `timeoutMs`. */
  awaitFloor(key: string, offset: number, timeoutMs: number): Promise<boolean> {
    const p = this.#partitions.get(key);
    if (p === undefined) return Promise.resolve(false);
    if (p.partition.superblock.tieredUpToOffset >= offset) return Promise.resolve(true);
    return this.#waiters.wait(key, offset, timeoutMs);
  }

  /** The tick: deadlines and retries in the core, the scan, and local retention. */
  onTick(nowMs: number): void {
    this.#step(core.tick(this.#state, nowMs));
    this.#scan.onTick(this.#partitions, nowMs, (p, segments) => {
      const before = this.#state;
      const generation = p.partition.superblock.purgeGeneration;
      this.#step(core.segmentsSealed(this.#state, { partition: p.key, generation, segments }, nowMs));
      return this.#state !== before;
    });
    this.#evictionLooks.onTick(this.#partitions, nowMs, this.#deps.clock.wallMs(), (p) => {
      return this.#evictions.look(p, (underPressure) => this.#pressure(p.key, underPressure)) !== null;
    });
    this.retention.onTick(nowMs);
    for (const command of this.#deferredFloors.takeDue(this.#partitions, nowMs)) {
      this.#applyFloor(command).catch((error) => {
        rethrowBug(error, this.#deps.logger, "applying a floor threw; the process stops", {
          partition: command.partition,
        });
        this.#deps.logger.error("floor not applied; trying again", { partition: command.partition, error });
        this.#deferredFloors.defer(command);
      });
    }
    this.#replaces.onTick(nowMs);
  }

  /** The control log committed a floor command: apply it to the partition and tell the core. */
  async #applyFloor(command: AdvanceTieredFloor): Promise<void> {
    const p = this.#partitions.get(command.partition);
    if (p === undefined) return;
    const outcome = await p.partition.applyFloor(command);
    if (outcome === "rejected_beyond_end" && this.#deps.leadership !== undefined) {
      // A follower behind its leader: the floor applies once its high watermark reaches it.
      this.#deferredFloors.defer(command);
      return;
    }
    if (outcome === "rejected_generation" || outcome === "rejected_beyond_end") {
      this.#deps.logger.warn("floor command rejected", {
        partition: command.partition,
        outcome,
        up_to_offset: command.upToOffset,
      });
      return;
    }
    const sb = p.partition.superblock;
    p.partition.log.holdProducerSnapshotsAbove(sb.tieredUpToOffset);
    this.#step(
      core.floorApplied(this.#state, {
        partition: p.key,
        generation: sb.purgeGeneration,
        floor: sb.tieredUpToOffset,
      }, this.#now()),
    );
    this.#waiters.wake(p.key, sb.tieredUpToOffset);
    this.#evictionLooks.touch(p.key);
    this.#scan.due(p.key, this.#now());
  }

  /** Local retention's look found the partition under pressure, or no longer. */
  #pressure(key: string, underPressure: boolean): void {
    const current = this.#state.partitions.get(key)?.underPressure ?? false;
    if (current !== underPressure) {
      this.#step(core.pressureChanged(this.#state, { partition: key, underPressure }, this.#now()));
    }
  }

  #now(): number {
    return this.#deps.clock.nowMs();
  }

  #step(step: Step): void {
    this.#state = step.state;
    for (const effect of step.effects) this.#run(effect);
  }

  #run(effect: UploadEffect): void {
    if (effect.kind === "start_upload") this.#uploads.start(effect);
    else if (effect.kind === "submit_floor") this.#submitFloor(effect);
    else reportUploadEffect(effect, this.#deps.logger, this.#deps.metrics);
  }

  /** Submits a floor command; its failure is an event for the core, which decides what follows. */
  #submitFloor(effect: SubmitFloor): void {
    // On a single node the log's own epoch; in a cluster the epoch this node leads the partition under.
    const term = this.#deps.leadership === undefined
      ? this.#control?.epoch
      : this.#terms.get(effect.partition);
    submitFloorCommand(effect, this.#control?.log ?? null, term, this.#deps.logger, (fenced) => {
      this.#floorSubmissionFailed(effect, fenced);
    });
  }

  #floorSubmissionFailed(effect: SubmitFloor, fenced: boolean): void {
    this.#deps.metrics?.floorSubmissionsFailed.inc();
    this.#step(core.floorSubmissionFailed(this.#state, {
      partition: effect.partition,
      generation: effect.generation,
      upToOffset: effect.upToOffset,
      attempt: effect.attempt,
      fenced,
      random: this.#deps.rng.nextFloat(),
    }, this.#now()));
  }

  /** An upload the core started ended: the core hears how. */
  #uploadReported(report: UploadReport): void {
    const nowMs = this.#now();
    switch (report.kind) {
      case "segment_deleted":
        this.#step(core.segmentDeleted(this.#state, report, nowMs));
        return;
      case "uploaded":
        this.#step(core.uploadSucceeded(this.#state, report, nowMs));
        return;
      case "failed":
        this.#step(core.uploadFailed(this.#state, report, nowMs));
        return;
    }
  }
}

/** The upload core's effects that only tell: the shell counts and logs them, and does nothing else. */
export type ReportedEffect = Extract<
  UploadEffect,
  { kind: "gave_up_deleted" | "duplicate_discarded" | "anomaly" | "floor_fenced" }
>;

/** Counts and logs one of the core's telling effects. */
export function reportUploadEffect(
  effect: ReportedEffect,
  logger: Logger,
  metrics: TierMetrics | undefined,
): void {
  switch (effect.kind) {
    case "gave_up_deleted":
      metrics?.segmentsGivenUp.inc();
      logger.warn("segment deleted by retention before upload; the floor moves past it", {
        partition: effect.partition,
        start_offset: effect.segment.startOffset,
        end_offset: effect.segment.endOffset,
      });
      return;
    case "duplicate_discarded":
      logger.debug("duplicate upload result discarded", {
        partition: effect.partition,
        identity: effect.identity,
      });
      return;
    case "anomaly":
      metrics?.anomalies.inc();
      logger.error("upload anomaly: an object exists with other bytes; the floor is stalled", {
        partition: effect.partition,
        start_offset: effect.segment.startOffset,
        detail: effect.detail,
      });
      return;
    case "floor_fenced":
      logger.error("floor command refused: the partition's epoch moved; not submitted again", {
        partition: effect.partition,
        up_to_offset: effect.upToOffset,
      });
      return;
  }
}
