import { Catalog } from "../broker/catalog.ts";
import { DataPlane } from "../broker/data_plane.ts";
import { LocalMetadataStore } from "../broker/local_metadata_store.ts";
import { PartitionOpener } from "../broker/partition_opener.ts";
import { ShardRuntime, type ShardTiering } from "../broker/shard_runtime.ts";
import { ShardSet } from "../broker/shard_set.ts";
import { topicDefaultsOf } from "../broker/topic_options.ts";
import type { Config } from "../config/config.ts";
import type { Partition } from "../log/partition.ts";
import type { DeadlineObjectStore } from "../objectstore/deadline_object_store.ts";
import { BufferPool } from "../runtime/buffer_pool.ts";
import type { Clock } from "../runtime/clock.ts";
import type { Cooperation } from "../runtime/cooperation.ts";
import type { Disk } from "../runtime/disk.ts";
import type { Logger } from "../runtime/logger.ts";
import type { Registry } from "../runtime/metrics.ts";
import type { PieceGate } from "../runtime/piece_gate.ts";
import { Pump } from "../runtime/pump.ts";
import { PumpMetrics } from "../runtime/pump_metrics.ts";
import type { Rng } from "../runtime/rng.ts";
import { Semaphore } from "../runtime/semaphore.ts";
import { TokenBucket } from "../runtime/token_bucket.ts";
import { CacheMetrics } from "../tier/cache_metrics.ts";
import { ChunkCache } from "../tier/chunk_cache.ts";
import { LocalControlLog } from "../tier/local_control_log.ts";
import { Housekeeping } from "../tier/housekeeping.ts";
import { HousekeepingMetrics } from "../tier/housekeeping_metrics.ts";
import { TierMetrics } from "../tier/tier_metrics.ts";
import { pooledWindowBytes, pooledWindowsMax, TierRemoteReader } from "../tier/tier_remote_reader.ts";
import { TierService } from "../tier/tier_service.ts";

export interface BrokerDeps {
  config: Config;
  disk: Disk;
  clock: Clock;
  rng: Rng;
  logger: Logger;
  registry: Registry;
  /** The object store, when tiered storage is enabled: each shard then runs a tier service. */
  objectStore: DeadlineObjectStore | null;
  /** The cooperative controls (benchmark switch; `cooperative` in production). */
  cooperation: Cooperation;
  /**
   * The process's piece gate: one event loop per process, so one piece of work per turn of it,
   * whichever shard does it. The disk's callers resume on the same gate (`GatedDisk`).
   */
  pieceGate: PieceGate;
}

/** The broker layer as the server runs it: the catalog, the data plane over it, and the shards. */
export interface OpenedBroker {
  catalog: Catalog;
  dataPlane: DataPlane;
  shards: ShardSet;
  /** Stops the shards and closes every partition, syncing its log. */
  close(): Promise<void>;
}

/** What the shards share when tiered storage is enabled. */
interface Tiered {
  store: DeadlineObjectStore;
  clusterId: string;
  metrics: { tier: TierMetrics; cache: CacheMetrics; housekeeping: HousekeepingMetrics };
}

/**
 * Wires the broker: the metadata (kept in a local file), one runtime per shard with its pump and,
 * with tiered storage, its tier service, chunk cache, control log and housekeeping; the catalog,
 * which opens every partition the metadata names; and the data plane. The only place that knows
 * which metadata store and control log implementations the broker runs on.
 */
export async function openBroker(deps: BrokerDeps): Promise<OpenedBroker> {
  const { config, disk, clock, logger } = deps;
  const dataPath = config.system.path;
  await disk.mkdirp(`${dataPath}/streams`);
  const metadata = new LocalMetadataStore(disk, dataPath, deps.rng, config.system.clusterId);
  await metadata.load();
  const pumpMetrics = new PumpMetrics(deps.registry);
  const tiered: Tiered | null = deps.objectStore === null ? null : {
    store: deps.objectStore,
    clusterId: metadata.doc.clusterId,
    metrics: {
      tier: new TierMetrics(deps.registry),
      cache: new CacheMetrics(deps.registry),
      housekeeping: new HousekeepingMetrics(deps.registry),
    },
  };
  const shards = await openShards(deps, pumpMetrics, tiered);
  const catalog = await Catalog.open({
    store: metadata,
    disk,
    clock,
    logger,
    partitions: new PartitionOpener({ disk, clock, rng: deps.rng, logger, settings: config.system }),
    host: shards,
    topicDefaults: topicDefaultsOf(config.tieredStorage),
  });
  // Opened after the partitions: the replay applies committed floors to them.
  for (const shard of shards.shards) {
    if (shard.tiering === null || tiered === null) continue;
    const tier = shard.tiering.tier;
    const log = await openControlLog(disk, dataPath, shard.id, tier);
    shard.attachControlLog(log, newHousekeeping(deps, shard, tier, tiered, catalog));
  }
  shards.startPumps();
  logger.info("broker opened", {
    cluster_id: metadata.doc.clusterId,
    streams: metadata.doc.streams.length,
    shards: shards.shards.length,
  });
  return {
    catalog,
    dataPlane: new DataPlane(catalog, shards),
    shards,
    close: async () => {
      await shards.close();
      await catalog.close();
    },
  };
}

async function openShards(
  deps: BrokerDeps,
  pumpMetrics: PumpMetrics,
  tiered: Tiered | null,
): Promise<ShardSet> {
  const { config, clock, logger } = deps;
  const budgetBytes = await cacheBudgetBytes(deps);
  const shards: ShardRuntime[] = [];
  for (let id = 0; id < config.system.shards; id++) {
    const shardLogger = logger.child({ shard: String(id) });
    const pump = new Pump({
      clock,
      metrics: pumpMetrics,
      logger: shardLogger,
      shard: String(id),
      tickIntervalMs: config.system.tickIntervalMs,
    });
    const tiering = tiered === null ? null : await openTiering(deps, tiered, id, shardLogger, budgetBytes);
    shards.push(
      new ShardRuntime({
        id,
        pump,
        logger: shardLogger,
        pieceGate: deps.pieceGate,
        wallMs: () => clock.wallMs(),
        tiering,
      }),
    );
  }
  return new ShardSet(shards);
}

/** The cache budget: the smaller of size and size_percent of the data disk, split among shards later. */
async function cacheBudgetBytes(deps: BrokerDeps): Promise<number> {
  if (deps.objectStore === null) return 0;
  const c = deps.config.tieredStorage.cache;
  const capacityBytes = await deps.disk.capacityBytes(deps.config.system.path);
  const budgetBytes = Math.min(c.sizeBytes, Math.floor((capacityBytes * c.sizePercent) / 100));
  deps.logger.info("chunk cache budget", { budget_bytes: budgetBytes, size_bytes: c.sizeBytes });
  return budgetBytes;
}

async function openTiering(
  deps: BrokerDeps,
  { store, clusterId, metrics }: Tiered,
  id: number,
  shardLogger: Logger,
  budgetBytes: number,
): Promise<ShardTiering> {
  const tier = newTierService(deps, store, shardLogger, deps.pieceGate, clusterId, metrics.tier);
  const cache = await openChunkCache(deps, store, id, budgetBytes, metrics.cache);
  return {
    tier,
    cache,
    remoteReader: (partition) => newRemoteReader(deps.config, partition, cache, clusterId, metrics.cache),
  };
}

function newTierService(
  deps: BrokerDeps,
  store: DeadlineObjectStore,
  logger: Logger,
  pieceGate: PieceGate,
  clusterId: string,
  metrics: TierMetrics,
): TierService {
  const { clock, rng, disk, config } = deps;
  const t = config.tieredStorage;
  return new TierService({
    clock,
    rng,
    logger,
    disk,
    store,
    bandwidth: new TokenBucket(clock, {
      rateBytesPerSec: t.uploadBandwidthBytesPerSec,
      waitersMax: 1024,
      name: "upload bandwidth",
    }),
    metrics,
    cooperation: deps.cooperation,
    pieceGate,
    config: {
      prefix: t.s3.prefix,
      clusterId,
      uploadConcurrency: t.uploadConcurrency,
      uploadPieceBytes: t.uploadPieceBytes,
      uploadLoopBackoffMaxMs: t.uploadLoopBackoffMaxMs,
      segmentUploadTimeoutMs: t.segmentUploadTimeoutMs,
      retry: t.retry,
    },
  });
}

function openChunkCache(
  deps: BrokerDeps,
  store: DeadlineObjectStore,
  id: number,
  budgetBytes: number,
  metrics: CacheMetrics,
): Promise<ChunkCache> {
  const { config, disk, clock, logger } = deps;
  const c = config.tieredStorage.cache;
  return ChunkCache.open({
    disk,
    store,
    clock,
    logger,
    dir: `${c.path}/shard-${id}`,
    config: {
      budgetBytes: Math.max(1, Math.floor(budgetBytes / config.system.shards)),
      objectsMax: Math.max(1, Math.floor(c.objectsMax / config.system.shards)),
      lowWatermarkPercent: c.lowWatermarkPercent,
      trimMinIntervalMs: c.trimMinIntervalMs,
    },
    fetchTimeoutMs: config.tieredStorage.fetchTimeoutMs,
    fetchDeadlineMs: config.tieredStorage.requestTimeoutMs,
    cooperation: deps.cooperation,
    gate: deps.pieceGate,
    windowPool: new BufferPool({ bufferBytes: pooledWindowBytes, buffersMax: pooledWindowsMax }),
    fetchSlots: new Semaphore({
      permits: config.tieredStorage.fetchConcurrency,
      waitersMax: 4096,
      name: "fetch slot",
    }),
    fetchBandwidth: new TokenBucket(clock, {
      rateBytesPerSec: config.tieredStorage.fetchBandwidthBytesPerSec === "unlimited"
        ? "unlimited"
        : Math.max(1, Math.floor(config.tieredStorage.fetchBandwidthBytesPerSec / config.system.shards)),
      waitersMax: 4096,
      name: "fetch bandwidth",
    }),
    metrics,
  });
}

function newRemoteReader(
  config: Config,
  partition: Partition,
  cache: ChunkCache,
  clusterId: string,
  metrics: CacheMetrics,
): TierRemoteReader {
  return new TierRemoteReader(partition, cache, {
    prefix: config.tieredStorage.s3.prefix,
    clusterId,
    chunkBytes: config.tieredStorage.cache.chunkBytes,
    readaheadChunksMax: config.tieredStorage.cache.readaheadChunksMax,
    metrics,
  });
}

/** Opens the shard's control log, replaying it into its tier service, and attaches it there. */
async function openControlLog(
  disk: Disk,
  dataPath: string,
  id: number,
  tier: TierService,
): Promise<LocalControlLog> {
  const log = await LocalControlLog.open(disk, `${dataPath}/control/shard-${id}.log`);
  await tier.attachControlLog(log);
  return log;
}

function newHousekeeping(
  deps: BrokerDeps,
  shard: ShardRuntime,
  tier: TierService,
  { store, clusterId, metrics }: Tiered,
  catalog: Catalog,
): Housekeeping {
  const t = deps.config.tieredStorage;
  return new Housekeeping({
    clock: deps.clock,
    logger: deps.logger.child({ shard: String(shard.id), component: "housekeeping" }),
    store,
    config: {
      ...t.housekeeping,
      prefix: t.s3.prefix,
      clusterId,
      segmentUploadTimeoutMs: t.segmentUploadTimeoutMs,
    },
    sweepsOrphans: shard.id === 0,
    partitions: () => tier.partitions(),
    requestCount: () => shard.requests,
    liveTable: () => catalog.incarnationTable(),
    upload: tier.uploadDeps,
    metrics: metrics.housekeeping,
  });
}
