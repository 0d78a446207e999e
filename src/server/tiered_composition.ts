import { checkBucketFormat } from "../tier/bucket/bucket_format.ts";
import type { Catalog } from "../broker/catalog/catalog.ts";
import { ConfigError } from "../config/config_error.ts";
import { cacheBudgetMinBytes } from "../config/load_config.ts";
import type { ShardRuntime, ShardTiering } from "../broker/shards/shard_runtime.ts";
import type { DeadlineObjectStore } from "../objectstore/retrying_object_store.ts";
import { BufferPool } from "../runtime/memory/buffers.ts";
import type { Logger } from "../runtime/logger.ts";
import { Semaphore } from "../runtime/cooperation/semaphore.ts";
import { TokenBucket } from "../runtime/cooperation/token_bucket.ts";
import { CacheMetrics } from "../tier/cache/cache_metrics.ts";
import { ChunkCache } from "../tier/cache/chunk_cache.ts";
import { IndexCacheMetrics, RemoteIndexes } from "../tier/cache/remote_indexes.ts";
import { Housekeeping } from "../tier/housekeeping/housekeeping.ts";
import { HousekeepingMetrics } from "../tier/housekeeping/housekeeping_metrics.ts";
import { LocalControlLog } from "../tier/control/local_control_log.ts";
import { TierMetrics } from "../tier/tier_metrics.ts";
import {
  largeWindowBytes,
  largeWindowsMax,
  pooledWindowBytes,
  pooledWindowsMax,
  type TierRemoteReaderOptions,
} from "../tier/cache/tier_remote_reader.ts";
import type { ReplaceAcks } from "../cluster/replace_acks.ts";
import { TierService } from "../tier/tier_service.ts";
import { BucketStateTransfer, type StateTransferDeps } from "../tier/restore/state_transfer.ts";
import type { PartitionSeeder } from "../log/partition/seeded_partition.ts";
import type { BrokerDeps } from "./open_broker.ts";

/** Bound on a shard's uploads waiting for `upload_bandwidth` tokens. */
export const uploadBandwidthWaitersMax = 1024;
/** Bound on a shard's chunk fetches waiting for a `fetch_concurrency` slot; one more is refused as overloaded. */
export const fetchSlotWaitersMax = 4096;
/** Bound on a shard's chunk fetches waiting for `fetch_bandwidth` tokens; one more is refused as overloaded. */
export const fetchBandwidthWaitersMax = 4096;

/** The metrics every shard's tiered storage reports to. */
interface TieredMetrics {
  tier: TierMetrics;
  cache: CacheMetrics;
  indexes: IndexCacheMetrics;
  housekeeping: HousekeepingMetrics;
}

/**
 * The tiered-storage part of the broker's composition: what every shard shares (the object store,
 * the cluster id, the metrics, the chunk cache budget) with the broker's deps, and the wiring of
 * one shard's tier service, chunk cache, control log and housekeeping from them.
 */
export class TieredComposition {
  readonly #deps: BrokerDeps;
  readonly #store: DeadlineObjectStore;
  readonly #clusterId: string;
  readonly #metrics: TieredMetrics;
  /** The whole process's chunk cache budget, which the shards split. */
  readonly #cacheBudgetBytes: number;

  private constructor(
    deps: BrokerDeps,
    store: DeadlineObjectStore,
    clusterId: string,
    cacheBudgetBytes: number,
    metrics: TieredMetrics,
  ) {
    this.#deps = deps;
    this.#store = store;
    this.#clusterId = clusterId;
    this.#cacheBudgetBytes = cacheBudgetBytes;
    this.#metrics = metrics;
  }

  /** The metrics registered, and the cache budget: the smaller of size and size_percent of the data disk. */
  static async open(
    deps: BrokerDeps,
    store: DeadlineObjectStore,
    clusterId: string,
  ): Promise<TieredComposition> {
    const metrics: TieredMetrics = {
      tier: new TierMetrics(deps.registry),
      cache: new CacheMetrics(deps.registry),
      indexes: new IndexCacheMetrics(deps.registry),
      housekeeping: new HousekeepingMetrics(deps.registry),
    };
    const c = deps.config.tieredStorage.cache;
    const capacityBytes = await deps.disk.capacityBytes(deps.config.system.path);
    const budgetBytes = Math.min(c.sizeBytes, Math.floor((capacityBytes * c.sizePercent) / 100));
    const budgetMinBytes = cacheBudgetMinBytes(deps.config);
    if (budgetBytes < budgetMinBytes) {
      throw new ConfigError(
        "[tiered_storage.cache] size_percent",
        `${c.sizePercent} % of the data disk (${capacityBytes} bytes) leaves the cache ${budgetBytes} bytes, ` +
          `under 2 × chunk_size × fetch_concurrency × shards = ${budgetMinBytes}`,
      );
    }
    deps.logger.info("chunk cache budget", { budget_bytes: budgetBytes, size_bytes: c.sizeBytes });
    await checkBucketFormat(store, deps.config.tieredStorage.s3.prefix, clusterId);
    return new TieredComposition(deps, store, clusterId, budgetBytes, metrics);
  }

  /** Shard `id`'s tier service and chunk cache (opened: its directory walked). */
  async shardTiering(id: number, shardLogger: Logger): Promise<ShardTiering> {
    const tier = this.#tierService(shardLogger);
    const cache = await this.#chunkCache(id);
    return { tier, cache, remoteReads: this.#remoteReads(cache, shardLogger) };
  }

  /**
   * Opens the shard's control log, replaying it into its tier service (after the partitions are
   * hosted, since the replay applies committed floors to them), and attaches it to the shard with
   * its housekeeping.
   */
  async attachControlLog(shard: ShardRuntime, tier: TierService, catalog: Catalog): Promise<void> {
    const path = `${this.#deps.config.system.path}/control/shard-${shard.id}.log`;
    // In a cluster the floors are committed to etcd, which every replica watches.
    const log = this.#deps.cluster?.controlLog() ?? await LocalControlLog.open(this.#deps.disk, path);
    await tier.attachControlLog(log);
    shard.attachControlLog(log, this.#housekeeping(shard, tier, catalog));
  }

  /** How a new replica of a tiered partition takes its tiered part from the bucket. */
  stateTransfer(committedFloor: StateTransferDeps["committedFloor"]): PartitionSeeder {
    return new BucketStateTransfer({
      store: this.#store,
      prefix: this.#deps.config.tieredStorage.s3.prefix,
      clusterId: this.#clusterId,
      committedFloor,
      logger: this.#deps.logger,
      transferred: (segments, bytes) => {
        this.#metrics.tier.transferredSegments.inc(segments);
        this.#metrics.tier.transferredBytes.inc(bytes);
      },
    });
  }

  #tierService(logger: Logger): TierService {
    const { clock, rng, disk, config } = this.#deps;
    const t = config.tieredStorage;
    return new TierService({
      clock,
      rng,
      logger,
      disk,
      store: this.#store,
      bandwidth: new TokenBucket(clock, {
        rateBytesPerSec: t.uploadBandwidthBytesPerSec,
        waitersMax: uploadBandwidthWaitersMax,
        name: "upload bandwidth",
      }),
      metrics: this.#metrics.tier,
      pieceGate: this.#deps.pieceGate,
      ...(this.#deps.cluster !== null ? { leadership: this.#deps.cluster.tierLeadership() } : {}),
      ...(this.#replaceAcks !== null
        ? { replaceTaken: (label: string, start: number) => this.#replaceAcks!.ack(label, start) }
        : {}),
      config: {
        prefix: t.s3.prefix,
        clusterId: this.#clusterId,
        uploadConcurrency: t.uploadConcurrency,
        uploadPieceBytes: t.uploadPieceBytes,
        uploadLoopBackoffMaxMs: t.uploadLoopBackoffMaxMs,
        segmentUploadTimeoutMs: t.segmentUploadTimeoutMs,
        uploadStallAfterMs: t.uploadStallAfterMs,
        retry: t.retry,
      },
    });
  }

  #chunkCache(id: number): Promise<ChunkCache> {
    const { config, disk, clock, logger } = this.#deps;
    const t = config.tieredStorage;
    const shards = config.system.shards;
    return ChunkCache.open({
      disk,
      store: this.#store,
      clock,
      logger,
      dir: `${t.cache.path}/shard-${id}`,
      config: {
        budgetBytes: Math.max(1, Math.floor(this.#cacheBudgetBytes / shards)),
        objectsMax: Math.max(1, Math.floor(t.cache.objectsMax / shards)),
        lowWatermarkPercent: t.cache.lowWatermarkPercent,
        trimMinIntervalMs: t.cache.trimMinIntervalMs,
      },
      fetchTimeoutMs: t.fetchTimeoutMs,
      fetchDeadlineMs: t.requestTimeoutMs,
      gate: this.#deps.pieceGate,
      windowPool: new BufferPool({ bufferBytes: pooledWindowBytes, buffersMax: pooledWindowsMax }),
      largeWindowPool: new BufferPool({ bufferBytes: largeWindowBytes, buffersMax: largeWindowsMax }),
      fetchSlots: new Semaphore({
        permits: t.fetchConcurrency,
        waitersMax: fetchSlotWaitersMax,
        name: "fetch slot",
      }),
      fetchBandwidth: new TokenBucket(clock, {
        rateBytesPerSec: t.fetchBandwidthBytesPerSec === "unlimited"
          ? "unlimited"
          : Math.max(1, Math.floor(t.fetchBandwidthBytesPerSec / shards)),
        waitersMax: fetchBandwidthWaitersMax,
        name: "fetch bandwidth",
      }),
      metrics: this.#metrics.cache,
    });
  }

  /** How the shard's partitions read their remote segments, with the shard's own index cache. */
  #remoteReads(cache: ChunkCache, shardLogger: Logger): TierRemoteReaderOptions {
    const t = this.#deps.config.tieredStorage;
    const indexes = new RemoteIndexes({
      disk: this.#deps.disk,
      fetchIndex: (key, sizeBytes) => cache.fetchIndex(key, sizeBytes),
      budgetBytes: Math.max(1, Math.floor(t.cache.indexBytes / this.#deps.config.system.shards)),
      chunkBytes: t.cache.chunkBytes,
      logger: shardLogger,
      metrics: this.#metrics.indexes,
    });
    return {
      prefix: t.s3.prefix,
      clusterId: this.#clusterId,
      chunkBytes: t.cache.chunkBytes,
      readaheadChunksMax: t.cache.readaheadChunksMax,
      indexes,
      sidecars: this.#store,
      metrics: this.#metrics.cache,
    };
  }

  /** In a cluster, which replicas took each replace (merge); null on a single node. */
  get #replaceAcks(): ReplaceAcks | null {
    return this.#deps.cluster?.replaceAcks ?? null;
  }

  /** Shard 0 sweeps for orphans: on a single node always, in a cluster while its node is the controller. */
  #sweepsOrphans(shard: ShardRuntime): boolean | (() => boolean) {
    const cluster = this.#deps.cluster;
    if (shard.id !== 0) return false;
    return cluster === null ? true : () => cluster.controller.epoch() !== null;
  }

  #housekeeping(shard: ShardRuntime, tier: TierService, catalog: Catalog): Housekeeping {
    const t = this.#deps.config.tieredStorage;
    return new Housekeeping({
      clock: this.#deps.clock,
      logger: this.#deps.logger.child({ shard: String(shard.id), component: "housekeeping" }),
      store: this.#store,
      config: {
        ...t.housekeeping,
        prefix: t.s3.prefix,
        clusterId: this.#clusterId,
        segmentUploadTimeoutMs: t.segmentUploadTimeoutMs,
      },
      ...(this.#replaceAcks !== null ? { replaceTakers: this.#replaceAcks } : {}),
      sweepsOrphans: this.#sweepsOrphans(shard),
      tier,
      requests: shard,
      incarnations: catalog,
      metrics: this.#metrics.housekeeping,
    });
  }
}
