import type { Partition } from "../log/partition.ts";
import { type KeepLocal, keepLocalWithin } from "../log/local_retention.ts";
import type { Segment } from "../log/segment.ts";
import { DiskError } from "../runtime/disk.ts";
import type { Cancel, Clock } from "../runtime/clock.ts";
import type { Logger } from "../runtime/logger.ts";
import type { Rng } from "../runtime/rng.ts";
import type { TokenBucket } from "../runtime/token_bucket.ts";
import type { Disk } from "../runtime/disk.ts";
import type { PieceGate } from "../runtime/piece_gate.ts";
import { type Cooperation, cooperative, naiveConcurrencyMax } from "../runtime/cooperation.ts";
import { classify } from "../objectstore/object_store_errors.ts";
import type { RetryingObjectStore } from "../objectstore/retrying_object_store.ts";
import type { RetryProfiles } from "../objectstore/retry_policy.ts";
import type { ControlLog } from "./control_log.ts";
import { incarnationOf, segmentKeys } from "./object_keys.ts";
import { type UploadDeps, uploadSegment } from "./segment_uploader.ts";
import * as core from "./upload_core.ts";
import type { TierGaugeSource, TierMetrics } from "./tier_metrics.ts";

/** The local envelope of a topic; null means unlimited. */
export interface LocalEnvelope {
  ageMs: number | null;
  sizeBytes: number | null;
}

export interface TieredPartition {
  /** "{stream}/{topic}/{partition}" by id. */
  key: string;
  partition: Partition;
  /** Read at each use: topic options may change. */
  tiered: () => boolean;
  envelope: () => LocalEnvelope;
}

export interface TierServiceConfig {
  prefix: string;
  clusterId: string;
  uploadConcurrency: number;
  uploadPieceBytes: number;
  uploadLoopBackoffMaxMs: number;
  segmentUploadTimeoutMs: number;
  retry: RetryProfiles;
}

export interface TierServiceDeps {
  clock: Clock;
  rng: Rng;
  logger: Logger;
  disk: Disk;
  store: RetryingObjectStore;
  bandwidth: TokenBucket;
  config: TierServiceConfig;
  metrics?: TierMetrics;
  /** The benchmark's switch; `cooperative` unless the pump benchmark's naive phase runs. */
  cooperation?: Cooperation;
  /** The shard's piece gate, shared with the chunk cache. */
  pieceGate?: PieceGate;
}

/** How often eviction and local pressure are looked at, besides right after a floor moves. */
const evictionCheckIntervalMs = 1000;

/** Bound on `await` waiters per shard. */
const floorWaitersMax = 10_000;
const scanBackoffMinMs = 100;

interface FloorWaiter {
  key: string;
  offset: number;
  resolve: (reached: boolean) => void;
  cancel: Cancel;
}

/**
 * One shard's tier service: the imperative shell around the pure upload core. Driven from the
 * shard's tick: it feeds the core sealed segments (on seal, and from a scan that backs off from
 * 100 ms to `upload_loop_backoff_max` while it finds nothing), runs the effects the core returns
 * (uploads, floor commands to the control log), applies committed floors to partitions, and
 * evicts local copies below the floor beyond each topic's local envelope.
 */
export class TierService implements TierGaugeSource {
  readonly #deps: TierServiceDeps;
  #state: core.UploadState;
  readonly #partitions = new Map<string, TieredPartition>();
  /**
   * What the scan last saw of each partition: its sealed count and whether it was tiered. A change
   * of either (a roll, tiering turned on) makes the next tick look at once, not after the backoff.
   */
  readonly #sealedSeen = new Map<string, number>();
  readonly #evicting = new Set<string>();
  /** The .log CRC32 of segments uploaded and not yet evicted, so eviction need not read them again. */
  readonly #uploadedCrc32 = new Map<string, Map<number, number>>();
  #evictionDue = true;
  #lastEvictionMs = -Infinity;
  readonly #waiters = new Set<FloorWaiter>();
  #scanDelayMs = scanBackoffMinMs;
  #nextScanMs = 0;
  #controlLog: ControlLog | null = null;

  constructor(deps: TierServiceDeps) {
    this.#deps = deps;
    deps.metrics?.addSource(this);
    this.#state = core.initialState({
      concurrencyMax: deps.config.uploadConcurrency,
      transferDeadlineMs: 4 * deps.config.segmentUploadTimeoutMs,
      profiles: deps.config.retry,
      pendingPerPartitionMax: 1000,
    });
  }

  /**
   * Attached after the partitions are added: opening the control log replays it through
   * `applyFloor`, which needs them.
   */
  attachControlLog(log: ControlLog): void {
    this.#controlLog = log;
  }

  uploadsInFlight(): number {
    return core.inFlightCount(this.#state);
  }

  stalledOffset(): number | null {
    return core.stalledOffset(this.#state);
  }

  localOvershootBytes(): number {
    let overshoot = 0;
    for (const p of this.#partitions.values()) {
      const limit = p.envelope().sizeBytes;
      if (limit === null) continue;
      overshoot += Math.max(0, p.partition.log.localSizeBytes - limit);
    }
    return overshoot;
  }

  *floors(): Iterable<[string, number]> {
    for (const [key, p] of this.#partitions) yield [key, p.partition.superblock.tieredUpToOffset];
  }

  /** The partitions this shard tiers, for housekeeping. */
  partitions(): Iterable<TieredPartition> {
    return this.#partitions.values();
  }

  /** What an upload needs, shared with the verify pass's re-uploads (same pacing). */
  get uploadDeps(): UploadDeps {
    return {
      disk: this.#deps.disk,
      store: this.#deps.store,
      pieceBytes: this.#deps.config.uploadPieceBytes,
      bandwidth: this.#deps.bandwidth,
      naive: this.#naive,
      ...(this.#deps.pieceGate !== undefined ? { gate: this.#deps.pieceGate } : {}),
    };
  }

  get #naive(): boolean {
    return (this.#deps.cooperation ?? cooperative).naive;
  }

  /** The state the core holds, for gauges and tests. */
  get state(): core.UploadState {
    return this.#state;
  }

  addPartition(p: TieredPartition): void {
    this.#partitions.set(p.key, p);
    const sb = p.partition.superblock;
    this.#step(
      core.partitionOpened(this.#state, {
        partition: p.key,
        generation: sb.purgeGeneration,
        floor: sb.tieredUpToOffset,
      }, this.#now()),
    );
    this.#nextScanMs = 0;
  }

  removePartition(key: string): void {
    this.#partitions.delete(key);
    this.#sealedSeen.delete(key);
    this.#uploadedCrc32.delete(key);
    this.#step(core.partitionClosed(this.#state, { partition: key }, this.#now()));
  }

  /** The control log committed a floor command: apply it to the partition and tell the core. */
  async applyFloor(
    command: { partition: string; purgeGeneration: number; upToOffset: number },
  ): Promise<void> {
    const p = this.#partitions.get(command.partition);
    if (p === undefined) return;
    const outcome = await p.partition.applyFloor({ kind: "advance_tiered_floor", ...command });
    if (outcome === "rejected_generation" || outcome === "rejected_beyond_end") {
      this.#deps.logger.warn("floor command rejected", {
        partition: command.partition,
        outcome,
        up_to_offset: command.upToOffset,
      });
      return;
    }
    const sb = p.partition.superblock;
    this.#step(
      core.floorApplied(this.#state, {
        partition: p.key,
        generation: sb.purgeGeneration,
        floor: sb.tieredUpToOffset,
      }, this.#now()),
    );
    this.#wakeWaiters(p.key, sb.tieredUpToOffset);
    this.#evictionDue = true;
  }

  /** A purge bumped the partition's generation: the core starts over for it. */
  purged(key: string): void {
    const p = this.#partitions.get(key);
    if (p === undefined) return;
    this.#uploadedCrc32.delete(key);
    this.#step(
      core.purged(
        this.#state,
        { partition: key, generation: p.partition.superblock.purgeGeneration },
        this.#now(),
      ),
    );
    this.#wakeWaiters(key, 0);
  }

  /** Resolves true once every offset below `offset` is in the store, false after `timeoutMs`. */
  awaitFloor(key: string, offset: number, timeoutMs: number): Promise<boolean> {
    const p = this.#partitions.get(key);
    if (p === undefined) return Promise.resolve(false);
    if (p.partition.superblock.tieredUpToOffset >= offset) return Promise.resolve(true);
    if (this.#waiters.size >= floorWaitersMax) {
      return Promise.reject(new Error("Cannot await the floor: too many waiters"));
    }
    return new Promise((resolve) => {
      const waiter: FloorWaiter = {
        key,
        offset,
        resolve,
        cancel: this.#deps.clock.schedule(timeoutMs, () => {
          this.#waiters.delete(waiter);
          resolve(false);
        }),
      };
      this.#waiters.add(waiter);
    });
  }

  /** The tick: deadlines and retries in the core, the scan, and eviction passes. */
  onTick(nowMs: number): void {
    // The naive benchmark phase lifts the concurrency cap; leaving it puts the configured one back.
    const concurrencyMax = this.#naive ? naiveConcurrencyMax : this.#deps.config.uploadConcurrency;
    if (this.#state.config.concurrencyMax !== concurrencyMax) {
      this.#state = { ...this.#state, config: { ...this.#state.config, concurrencyMax } };
    }
    this.#step(core.tick(this.#state, nowMs));
    this.#scan(nowMs);
    // Eviction and pressure are looked at once a second, or at the next tick after a floor moved:
    // not on every tick, which is the pump's hot path.
    if (this.#evictionDue || nowMs - this.#lastEvictionMs >= evictionCheckIntervalMs) {
      this.#evictionDue = false;
      this.#lastEvictionMs = nowMs;
      for (const p of this.#partitions.values()) this.#evict(p);
    }
  }

  #now(): number {
    return this.#deps.clock.nowMs();
  }

  #scan(nowMs: number): void {
    let sealedSinceLook = false;
    for (const [key, p] of this.#partitions) {
      if (this.#sealedSeen.get(key) !== seenOf(p)) sealedSinceLook = true;
    }
    if (!sealedSinceLook && nowMs < this.#nextScanMs) return;
    let found = false;
    for (const [key, p] of this.#partitions) {
      this.#sealedSeen.set(key, seenOf(p));
      if (!p.tiered()) continue;
      const sb = p.partition.superblock;
      const segments = p.partition.log.segments
        .filter((s) => s.sealed && s.location === "local" && s.startOffset >= sb.tieredUpToOffset)
        .map((s) => ({
          startOffset: s.startOffset,
          endOffset: s.endOffset,
          sizeBytes: s.sizeBytes,
          sealedAtMs: s.maxTimestampUs / 1000,
        }));
      if (segments.length === 0) continue;
      const before = this.#state;
      this.#step(
        core.segmentsSealed(this.#state, { partition: key, generation: sb.purgeGeneration, segments }, nowMs),
      );
      if (this.#state !== before) found = true;
    }
    // Idle partitions cost nothing: the scan backs off while it finds nothing new.
    this.#scanDelayMs = found
      ? scanBackoffMinMs
      : Math.min(this.#scanDelayMs * 2, this.#deps.config.uploadLoopBackoffMaxMs);
    this.#nextScanMs = nowMs + this.#scanDelayMs;
  }

  #step(step: core.Step): void {
    this.#state = step.state;
    for (const effect of step.effects) this.#run(effect);
  }

  #run(effect: core.UploadEffect): void {
    const log = this.#deps.logger;
    switch (effect.kind) {
      case "start_upload":
        this.#deps.metrics?.uploadsStarted.inc();
        void this.#upload(effect);
        return;
      case "submit_floor":
        if (this.#controlLog === null) {
          log.error("floor command dropped: no control log attached", { partition: effect.partition });
          return;
        }
        this.#controlLog.submit({
          kind: "advance_tiered_floor",
          partition: effect.partition,
          purgeGeneration: effect.generation,
          upToOffset: effect.upToOffset,
        }).catch((error) => log.error("floor command failed", { partition: effect.partition, error }));
        return;
      case "gave_up_deleted":
        this.#deps.metrics?.segmentsGivenUp.inc();
        log.warn("segment deleted by retention before upload; the floor moves past it", {
          partition: effect.partition,
          start_offset: effect.segment.startOffset,
          end_offset: effect.segment.endOffset,
        });
        return;
      case "duplicate_discarded":
        log.debug("duplicate upload result discarded", {
          partition: effect.partition,
          identity: effect.identity,
        });
        return;
      case "anomaly":
        this.#deps.metrics?.anomalies.inc();
        log.error("upload anomaly: an object exists with other bytes; the floor is stalled", {
          partition: effect.partition,
          start_offset: effect.segment.startOffset,
          detail: effect.detail,
        });
        return;
    }
  }

  async #upload(effect: Extract<core.UploadEffect, { kind: "start_upload" }>): Promise<void> {
    const p = this.#partitions.get(effect.partition);
    const segment = p?.partition.log.segments.find((s) => s.startOffset === effect.segment.startOffset);
    if (p === undefined || segment === undefined || segment.location === "remote") {
      this.#step(
        core.segmentDeleted(this.#state, {
          partition: effect.partition,
          startOffset: effect.segment.startOffset,
        }, this.#now()),
      );
      return;
    }
    const { prefix, clusterId } = this.#deps.config;
    const keys = segmentKeys(
      incarnationOf(prefix, clusterId, p.partition, effect.generation),
      segment.startOffset,
    );
    const startedMs = this.#now();
    try {
      // The same deps as the verify pass's re-uploads, so that the piece gate and the benchmark's
      // switch reach every upload (docs/TUNING.md, item 41).
      const outcome = await uploadSegment(
        this.uploadDeps,
        sealedOf(segment),
        keys,
        this.#now() + this.#deps.config.segmentUploadTimeoutMs,
      );
      const event = { partition: effect.partition, identity: effect.identity };
      if (outcome.kind === "uploaded") {
        this.#deps.metrics?.uploadsCompleted.inc();
        this.#deps.metrics?.uploadedBytes.inc(outcome.sizeBytes + outcome.indexSizeBytes);
        this.#deps.metrics?.uploadDuration.observe((this.#now() - startedMs) / 1000);
      }
      // An upload of a generation a purge has since ended must not lend its checksum to the new
      // generation's segment at the same offset: eviction would write it into the new marker.
      const current = this.#partitions.get(effect.partition)?.partition.superblock.purgeGeneration;
      if (outcome.kind === "uploaded" && current === effect.generation) {
        const known = this.#uploadedCrc32.get(effect.partition) ?? new Map<number, number>();
        known.set(segment.startOffset, outcome.logCrc32);
        this.#uploadedCrc32.set(effect.partition, known);
      }
      this.#step(
        outcome.kind === "uploaded"
          ? core.uploadSucceeded(this.#state, event, this.#now())
          : core.uploadFailed(this.#state, {
            ...event,
            errorClass: "fail",
            anomaly: outcome.detail,
            random: this.#deps.rng.nextFloat(),
          }, this.#now()),
      );
    } catch (error) {
      if (error instanceof DiskError && error.code === "not_found") {
        this.#step(
          core.segmentDeleted(
            this.#state,
            { partition: effect.partition, startOffset: segment.startOffset },
            this.#now(),
          ),
        );
        return;
      }
      this.#deps.metrics?.uploadsFailed.inc({
        profile: classify(error) === "retry" ? "transient" : "non_transient",
      });
      this.#deps.logger.warn("upload failed; it will be retried", {
        partition: effect.partition,
        start_offset: segment.startOffset,
        error,
      });
      this.#step(core.uploadFailed(this.#state, {
        partition: effect.partition,
        identity: effect.identity,
        errorClass: classify(error),
        random: this.#deps.rng.nextFloat(),
      }, this.#now()));
    }
  }

  /** One eviction pass per partition at a time, below the floor and beyond the local envelope. */
  #evict(p: TieredPartition): void {
    if (this.#evicting.has(p.key)) return;
    const sb = p.partition.superblock;
    const envelope = p.envelope();
    const nowUs = this.#deps.clock.wallMs() * 1000;
    const keepLocal = keepLocalWithin(envelope, nowUs);
    const candidate = p.partition.log.segments.find((s) => s.sealed && s.location !== "remote");
    if (candidate === undefined || candidate.endOffset >= sb.tieredUpToOffset) {
      this.#updatePressure(p, keepLocal);
      return;
    }
    this.#evicting.add(p.key);
    p.partition.log.evictLocal(
      sb.tieredUpToOffset,
      {
        createdRevision: sb.createdRevision,
        purgeGeneration: sb.purgeGeneration,
      },
      keepLocal,
      (start) => this.#uploadedCrc32.get(p.key)?.get(start),
    )
      .catch((error) => this.#deps.logger.error("eviction failed", { partition: p.key, error }))
      .finally(() => {
        this.#evicting.delete(p.key);
        // Checksums are kept only while their segment still has a local .log: the map stays bounded.
        const known = this.#uploadedCrc32.get(p.key);
        const local = new Set(
          p.partition.log.segments.filter((s) => s.location !== "remote").map((s) => s.startOffset),
        );
        for (const start of known?.keys() ?? []) if (!local.has(start)) known!.delete(start);
      });
  }

  /** Under pressure: the envelope wants a segment gone that the floor has not passed yet. */
  #updatePressure(p: TieredPartition, keepLocal: KeepLocal): void {
    const localBytes = p.partition.log.localSizeBytes;
    const first = p.partition.log.segments.find((s) => s.sealed && s.location !== "remote");
    const underPressure = first !== undefined && !keepLocal(first, localBytes);
    const current = this.#state.partitions.get(p.key)?.underPressure ?? false;
    if (current !== underPressure) {
      this.#step(core.pressureChanged(this.#state, { partition: p.key, underPressure }, this.#now()));
    }
  }

  #wakeWaiters(key: string, floor: number): void {
    for (const w of this.#waiters) {
      if (w.key !== key || floor < w.offset) continue;
      w.cancel();
      this.#waiters.delete(w);
      w.resolve(true);
    }
  }
}

/** The sealed count and the tiered flag in one number: compared on every tick, so no allocation. */
function seenOf(p: TieredPartition): number {
  return p.partition.log.sealedCount * 2 + (p.tiered() ? 1 : 0);
}

function sealedOf(segment: Segment) {
  return {
    logPath: segment.logPath,
    indexPath: segment.indexPath,
    startOffset: segment.startOffset,
    endOffset: segment.endOffset,
    startTimestampUs: segment.firstTimestampUs ?? segment.maxTimestampUs,
    maxTimestampUs: segment.maxTimestampUs,
  };
}
