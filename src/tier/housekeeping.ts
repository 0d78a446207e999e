import type { HousekeepingConfig } from "../config/config.ts";
import type { Partition } from "../log/partition.ts";
import type { Segment } from "../log/segment.ts";
import type { DeadlineObjectStore } from "../objectstore/deadline_object_store.ts";
import type { Clock } from "../runtime/clock.ts";
import type { Logger } from "../runtime/logger.ts";
import * as core from "./housekeeping_core.ts";
import type { HousekeepingMetrics } from "./housekeeping_metrics.ts";
import { encodeManifest, manifestOf } from "./manifest.ts";
import { classifyObject, type IncarnationTable } from "./object_class.ts";
import {
  afterIncarnation,
  clusterRoot,
  incarnationOf,
  incarnationPrefix,
  manifestKey,
  parseObjectKey,
  type PartitionIncarnation,
  segmentKeys,
} from "./object_keys.ts";
import { type UploadDeps, uploadSegment } from "./segment_uploader.ts";
import { segmentStem } from "../log/segment.ts";

export interface HousekeptPartition {
  key: string;
  partition: Partition;
  /** Untiered topics have no objects: housekeeping leaves them alone. Read at each use. */
  tiered: () => boolean;
}

export interface HousekeepingDeps {
  clock: Clock;
  logger: Logger;
  store: DeadlineObjectStore;
  config: HousekeepingConfig & { prefix: string; clusterId: string; segmentUploadTimeoutMs: number };
  /** Shard 0 sweeps the cluster's prefix for orphans; the others do not. */
  sweepsOrphans: boolean;
  /** This shard's tiered partitions, read at each use. */
  partitions: () => Iterable<HousekeptPartition>;
  /** Produce and poll requests this shard has served so far. */
  requestCount: () => number;
  /** Every partition of the cluster, for the orphan sweep; read after each listing page. */
  liveTable: () => IncarnationTable;
  /** How the verify pass uploads a missing object again from a local .log. */
  upload: UploadDeps;
  metrics?: HousekeepingMetrics;
}

/** How often the core looks at the shard (the idle clock samples at this rate). */
const observeIntervalMs = 1000;
/** Dead incarnations the orphan sweep remembers between two sweeps. */
const deadIncarnationsMax = 10_000;
/** Bound on the orphan objects whose first sighting is remembered; past it, a later sweep takes them. */
const orphanObjectsTrackedMax = 100_000;

/** Thrown when a job would spend more than the run's quota; jobs check `left` first, so this is a bug guard. */
class QuotaSpent extends Error {
  constructor() {
    super("Cannot spend a request: the housekeeping run's request_quota is spent");
  }
}

/** The requests one run may still make. */
class Budget {
  #left: number;
  readonly #metrics: HousekeepingMetrics | undefined;
  constructor(requests: number, metrics: HousekeepingMetrics | undefined) {
    this.#left = requests;
    this.#metrics = metrics;
  }
  get left(): number {
    return this.#left;
  }
  /** Ends the run: every job stops before its next request. */
  exhaust(): void {
    this.#left = 0;
  }
  take(requests = 1): void {
    if (this.#left < requests) throw new QuotaSpent();
    this.#left -= requests;
    this.#metrics?.requests.inc(requests);
  }
}

/**
 * One shard's housekeeping: the shell around `housekeeping_core.ts`. Driven from the tick, it
 * observes the shard once a second and runs the jobs the core plans, spending at most
 * `request_quota` requests per run: deleting objects below retention watermarks (never younger than
 * `delete_grace`), uploading manifests, verifying keys below the floor (re-uploading from a local
 * `.log` when one is missing) and, on shard 0, sweeping the cluster's prefix for orphans.
 */
export class Housekeeping {
  readonly #deps: HousekeepingDeps;
  #state: core.HousekeepingState;
  #lastObservedMs = -Infinity;
  /** Incarnation prefix → when a sweep first found it gone. */
  #deadSince = new Map<string, number>();
  #deadSeenThisSweep = new Set<string>();
  /**
   * When each orphan object was first listed, by our own clock. Its creation came before that, so
   * deleting it a grace after this sighting never deletes an object younger than the grace, whatever
   * the store's clock says (its LastModified can be an hour off either way).
   */
  #orphanSeenAt = new Map<string, number>();
  #orphansSeenThisSweep = new Set<string>();
  #running: Promise<void> | null = null;
  #budget: Budget | null = null;
  #stopped = false;

  constructor(deps: HousekeepingDeps) {
    this.#deps = deps;
    const c = deps.config;
    this.#state = core.initialHousekeeping({
      intervalMs: c.intervalMs,
      idleTimeoutMs: c.idleTimeoutMs,
      idleThresholdRps: c.idleThresholdRps,
      deleteGraceMs: c.deleteGraceMs,
      orphanSweepIntervalMs: c.orphanSweepIntervalMs,
      manifestUploadIntervalMs: c.manifestUploadIntervalMs,
      verifyIntervalMs: c.verifyIntervalMs,
      sweepsOrphans: deps.sweepsOrphans,
    }, deps.clock.nowMs());
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
    this.#budget?.exhaust();
    return this.idle();
  }

  onTick(nowMs: number): void {
    if (this.#stopped || nowMs - this.#lastObservedMs < observeIntervalMs) return;
    this.#lastObservedMs = nowMs;
    const views: core.PartitionView[] = [];
    for (const { key, partition, tiered } of this.#deps.partitions()) {
      if (!tiered()) continue;
      const sb = partition.superblock;
      views.push({
        key,
        incarnation: `${sb.createdRevision}-${sb.purgeGeneration}`,
        floor: sb.tieredUpToOffset,
        deletedUpToOffset: sb.deletedUpToOffset,
      });
    }
    const step = core.observe(
      this.#state,
      { partitions: views, requestCount: this.#deps.requestCount() },
      nowMs,
    );
    this.#state = step.state;
    for (const effect of step.effects) this.#running = this.#run(effect.jobs);
  }

  async #run(jobs: core.HousekeepingJob[]): Promise<void> {
    this.#deps.metrics?.runs.inc();
    const budget = new Budget(this.#deps.config.requestQuota, this.#deps.metrics);
    this.#budget = budget;
    const outcomes: core.JobOutcome[] = [];
    for (const job of jobs) {
      if (budget.left === 0) break;
      try {
        const outcome = await this.#job(job, budget);
        if (outcome !== null) outcomes.push(outcome);
      } catch (error) {
        this.#deps.metrics?.failures.inc({ job: job.kind });
        this.#deps.logger.warn("housekeeping job failed; it is retried next run", { job: job.kind, error });
      }
    }
    this.#state = core.runFinished(this.#state, { outcomes }, this.#deps.clock.nowMs()).state;
    this.#running = null;
    this.#budget = null;
  }

  #job(job: core.HousekeepingJob, budget: Budget): Promise<core.JobOutcome | null> {
    if (job.kind === "orphan_sweep") return this.#sweep(job.startAfter, budget);
    const p = [...this.#deps.partitions()].find((x) => x.key === job.partition);
    if (p === undefined) return Promise.resolve(null);
    switch (job.kind) {
      case "delete_below":
        return this.#deleteBelow(p, job.fromOffset, job.belowOffset, budget);
      case "upload_manifest":
        return this.#uploadManifest(p, budget);
      case "verify":
        return this.#verify(p, job.fromOffset, budget);
    }
  }

  /**
   * Lists the incarnation from `fromOffset` and deletes the objects of segments that start below
   * `belowOffset`, at most `delete_batch_per_pass` keys, stopping at the first object younger than
   * the grace. Reports the offset below which everything is gone (a failed delete or a spent quota
   * reports less, and the next run lists from there again).
   */
  async #deleteBelow(
    p: HousekeptPartition,
    fromOffset: number,
    belowOffset: number,
    budget: Budget,
  ): Promise<core.JobOutcome> {
    const inc = this.#incarnation(p.partition);
    const prefix = incarnationPrefix(inc);
    const root = clusterRoot(inc.prefix, inc.clusterId);
    const graceMs = this.#deps.config.deleteGraceMs;
    const doomed: string[] = [];
    let reached = fromOffset;
    let stoppedAt: number | null = null;
    let startAfter = fromOffset === 0 ? undefined : `${prefix}${segmentStem(fromOffset)}`;
    listing: for (let page = 0; page < 1000; page++) {
      // One request for this page and one kept for the delete that follows.
      if (budget.left < 2) {
        stoppedAt = reached;
        break;
      }
      budget.take();
      const listed = await this.#deps.store.list(prefix, startAfter === undefined ? {} : { startAfter });
      const nowMs = this.#deps.clock.wallMs();
      for (const obj of listed.objects) {
        const key = parseObjectKey(root, obj.key);
        if (key.kind !== "segment") continue;
        if (key.startOffset >= belowOffset) break listing;
        const young = nowMs - obj.lastModifiedMs < graceMs;
        if (young || doomed.length >= this.#deps.config.deleteBatchPerPass) {
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
      const results = await this.#deps.store.delete(doomed);
      const failed = results.filter((r) => r.error !== null);
      this.#deps.metrics?.deletedObjects.inc({ reason: "watermark" }, results.length - failed.length);
      for (const f of failed) {
        const key = parseObjectKey(root, f.key);
        if (key.kind === "segment") stoppedAt = Math.min(stoppedAt ?? Infinity, key.startOffset);
      }
    }
    return { kind: "delete_below", partition: p.key, deletedBelow: stoppedAt ?? belowOffset };
  }

  async #uploadManifest(p: HousekeptPartition, budget: Budget): Promise<core.JobOutcome> {
    const manifest = manifestOf(p.partition);
    const bytes = encodeManifest(manifest);
    budget.take();
    await this.#deps.store.put(manifestKey(this.#incarnation(p.partition)), async function* () {
      yield bytes;
    }, { sizeBytes: bytes.length, metadata: { "format-version": "1" }, ifAbsent: false });
    this.#deps.metrics?.manifestsUploaded.inc();
    return {
      kind: "upload_manifest",
      partition: p.key,
      describes: `${manifest.tieredUpToOffset}:${manifest.deletedUpToOffset}`,
    };
  }

  /**
   * HEADs the `.log` and `.index` of each segment below the floor from `fromOffset` on and compares
   * size and CRC32 with what the segment (its marker, when evicted) records. A missing object with
   * its `.log` still local is uploaded again; otherwise it is reported, never hidden.
   */
  async #verify(p: HousekeptPartition, fromOffset: number, budget: Budget): Promise<core.JobOutcome> {
    const sb = p.partition.superblock;
    const inc = this.#incarnation(p.partition);
    const segments = p.partition.log.segments.filter((s) =>
      s.sealed && s.startOffset >= fromOffset && s.endOffset < sb.tieredUpToOffset &&
      s.startOffset >= sb.deletedUpToOffset
    );
    for (const segment of segments) {
      if (budget.left < 2) return { kind: "verify", partition: p.key, nextFrom: segment.startOffset };
      budget.take(2);
      const keys = segmentKeys(inc, segment.startOffset);
      const [log, index] = [await this.#deps.store.head(keys.log), await this.#deps.store.head(keys.index)];
      const problem = log === null ? "missing" : log.sizeBytes !== segment.sizeBytes ||
          (segment.marker !== null && log.metadata["crc32"] !== String(segment.marker.logCrc32))
        ? "mismatch"
        : index === null
        ? "missing_index"
        : null;
      if (problem === null) continue;
      if (problem !== "mismatch" && segment.location !== "remote") {
        budget.take(2);
        await this.#reupload(p, segment, keys);
        continue;
      }
      this.#deps.metrics?.verifyAnomalies.inc({ kind: problem });
      this.#deps.logger.error("verify: an object below the floor is missing or differs from its marker", {
        partition: p.key,
        start_offset: segment.startOffset,
        key: problem === "missing_index" ? keys.index : keys.log,
        problem,
        size_expected: segment.sizeBytes,
        size_found: log?.sizeBytes ?? null,
      });
    }
    return { kind: "verify", partition: p.key, nextFrom: null };
  }

  async #reupload(
    p: HousekeptPartition,
    segment: Segment,
    keys: { log: string; index: string },
  ): Promise<void> {
    const outcome = await uploadSegment(
      this.#deps.upload,
      {
        logPath: segment.logPath,
        indexPath: segment.indexPath,
        startOffset: segment.startOffset,
        endOffset: segment.endOffset,
        startTimestampUs: segment.firstTimestampUs ?? segment.maxTimestampUs,
        maxTimestampUs: segment.maxTimestampUs,
      },
      keys,
      this.#deps.clock.nowMs() + this.#deps.config.segmentUploadTimeoutMs,
    );
    if (outcome.kind === "anomaly") {
      this.#deps.metrics?.verifyAnomalies.inc({ kind: "mismatch" });
      this.#deps.logger.error("verify: re-upload found other bytes", {
        partition: p.key,
        detail: outcome.detail,
      });
      return;
    }
    this.#deps.metrics?.verifyReuploads.inc();
    this.#deps.logger.warn("verify: a missing object was uploaded again from the local .log", {
      partition: p.key,
      start_offset: segment.startOffset,
    });
  }

  /**
   * Lists the cluster's prefix and deletes the objects of incarnations that no longer exist
   * (stale generations, deleted or recreated partitions) once a sweep at least `delete_grace`
   * earlier found them gone, and only objects a sweep listed at least the grace ago (by our clock,
   * not the store's LastModified, which clock skew makes unreliable). A live incarnation is skipped
   * as a whole: the next listing starts after it.
   */
  async #sweep(startAfterKey: string | null, budget: Budget): Promise<core.JobOutcome> {
    const { prefix, clusterId, deleteGraceMs } = this.#deps.config;
    const root = clusterRoot(prefix, clusterId);
    let startAfter = startAfterKey ?? undefined;
    if (startAfter === undefined) {
      this.#deadSeenThisSweep.clear();
      this.#orphansSeenThisSweep.clear();
    }
    for (let page = 0; page < 1_000_000; page++) {
      if (budget.left < 2) return { kind: "orphan_sweep", nextAfter: startAfter ?? null };
      budget.take();
      const listed = await this.#deps.store.list(root, startAfter === undefined ? {} : { startAfter });
      const table = this.#deps.liveTable();
      const nowMs = this.#deps.clock.nowMs();
      const wallMs = this.#deps.clock.wallMs();
      const doomed: string[] = [];
      const seenAt = (objectKey: string): number | null => {
        this.#orphansSeenThisSweep.add(objectKey);
        const known = this.#orphanSeenAt.get(objectKey);
        if (known !== undefined) return known;
        if (this.#orphanSeenAt.size >= orphanObjectsTrackedMax) return null;
        this.#orphanSeenAt.set(objectKey, nowMs);
        return nowMs;
      };
      let skipAfter: string | null = null;
      for (const obj of listed.objects) {
        const key = parseObjectKey(root, obj.key);
        if (key.kind === "unrecognized") continue;
        // Age is left out here (Infinity ago): whether the incarnation is gone is the question.
        const c = classifyObject(key, -Infinity, table, wallMs, deleteGraceMs);
        if (c !== "stale_generation" && c !== "unknown_incarnation") {
          skipAfter = afterIncarnation(key.incarnationPrefix);
          continue;
        }
        skipAfter = null;
        this.#deps.metrics?.orphansFound.inc();
        const since = this.#deadSince.get(key.incarnationPrefix) ??
          this.#markDead(key.incarnationPrefix, nowMs);
        this.#deadSeenThisSweep.add(key.incarnationPrefix);
        const seen = seenAt(obj.key);
        if (
          since !== null && nowMs - since >= deleteGraceMs && seen !== null && nowMs - seen >= deleteGraceMs
        ) {
          doomed.push(obj.key);
        }
      }
      if (doomed.length > 0) {
        budget.take(Math.ceil(doomed.length / 1000));
        const results = await this.#deps.store.delete(doomed);
        this.#deps.metrics?.deletedObjects.inc(
          { reason: "orphan" },
          results.filter((r) => r.error === null).length,
        );
      }
      if (listed.nextStartAfter === null) break;
      startAfter = skipAfter ?? listed.nextStartAfter;
    }
    // A complete sweep forgets incarnations it no longer found: their objects are gone.
    for (const prefixKey of [...this.#deadSince.keys()]) {
      if (!this.#deadSeenThisSweep.has(prefixKey)) this.#deadSince.delete(prefixKey);
    }
    for (const objectKey of [...this.#orphanSeenAt.keys()]) {
      if (!this.#orphansSeenThisSweep.has(objectKey)) this.#orphanSeenAt.delete(objectKey);
    }
    return { kind: "orphan_sweep", nextAfter: null };
  }

  /** Remembers when an incarnation was first found gone; null when the memory is full (a later sweep). */
  #markDead(prefixKey: string, nowMs: number): number | null {
    if (this.#deadSince.size >= deadIncarnationsMax) return null;
    this.#deadSince.set(prefixKey, nowMs);
    return nowMs;
  }

  #incarnation(partition: Partition): PartitionIncarnation {
    return incarnationOf(this.#deps.config.prefix, this.#deps.config.clusterId, partition);
  }
}
