import type { LogConfig } from "../log/log_config.ts";
import { Partition } from "../log/partition/partition.ts";
import { defaultRetryProfiles } from "../objectstore/retry_policy.ts";
import { BufferPool } from "../runtime/memory/buffers.ts";
import type { Disk } from "../runtime/disk/disk.ts";
import { FileCacheDisk, OpenFileCache } from "../runtime/disk/open_files.ts";
import { silentLogger } from "../runtime/logger.ts";
import { Rng } from "../runtime/rng.ts";
import { Semaphore } from "../runtime/cooperation/semaphore.ts";
import { TokenBucket } from "../runtime/cooperation/token_bucket.ts";
import { writeBufferBytes, writeBuffersMax } from "../broker/shards/shard_runtime.ts";
import { ChunkCache } from "../tier/cache/chunk_cache.ts";
import { LocalControlLog } from "../tier/control/local_control_log.ts";
import { Housekeeping } from "../tier/housekeeping/housekeeping.ts";
import { TierRemoteReader } from "../tier/cache/tier_remote_reader.ts";
import { RemoteIndexes } from "../tier/cache/remote_indexes.ts";
import { TierService } from "../tier/tier_service.ts";
import {
  address,
  bucketPrefix,
  cacheChunkBytes,
  cacheDir,
  clusterId,
  controlLogPath,
  dataPath,
  fetchConcurrency,
  housekeepingConfig,
  logConfig,
  maxOpenFiles,
  partitionKey,
  uploadConcurrency,
  uploadPieceBytes,
} from "./sim_settings.ts";
import { rngStreams, streamSeed } from "./rng_streams.ts";
import type { World } from "./world.ts";

/** The process under test: a partition, its tier service, control log, chunk cache and housekeeping. */
export interface SimProcess {
  partition: Partition;
  tier: TierService;
  control: LocalControlLog;
  cache: ChunkCache;
  housekeeping: Housekeeping;
}

/** How long one segment's upload may take before it is abandoned and retried. */
const segmentUploadTimeoutMs = 10_000;

/** The tier service's settings: the simulated shard's small pieces and few concurrent uploads. */
const tierConfig = {
  prefix: bucketPrefix,
  clusterId,
  uploadConcurrency,
  uploadPieceBytes,
  uploadLoopBackoffMaxMs: 1000,
  segmentUploadTimeoutMs,
  uploadStallAfterMs: 30_000,
  retry: defaultRetryProfiles,
};

/** How reads of evicted segments go through the chunk cache: small chunks, two read ahead. */
/** Small, so that a run's reads load indexes again as older ones are dropped. */
const remoteIndexBudgetBytes = 4096;

const remoteReaderConfig = {
  prefix: bucketPrefix,
  clusterId,
  chunkBytes: cacheChunkBytes,
  readaheadChunksMax: 2,
};

/** The partition's remote reader, over the process's chunk cache and an index cache of its own. */
function remoteReaderOf(partition: Partition, cache: ChunkCache, disk: Disk): TierRemoteReader {
  const indexes = new RemoteIndexes({
    disk,
    fetchIndex: (key, sizeBytes) => cache.fetchIndex(key, sizeBytes),
    budgetBytes: remoteIndexBudgetBytes,
    chunkBytes: cacheChunkBytes,
    logger: silentLogger(),
  });
  return new TierRemoteReader(partition, cache, { ...remoteReaderConfig, indexes });
}

/** Housekeeping's settings, with the bucket's names and the upload timeout it shares. */
const processHousekeepingConfig = {
  ...housekeepingConfig,
  prefix: bucketPrefix,
  clusterId,
  segmentUploadTimeoutMs,
};

/**
 * The process's disk as a server gives it to its partitions: held files share `maxOpenFiles`
 * handles. One cache per partition object, which is the process's one partition: a crash or a wipe
 * leaves the old one with the old process.
 */
function partitionDisk(w: World): Disk {
  return new FileCacheDisk(w.disk, new OpenFileCache({ maxOpenFiles }));
}

/** A new, empty partition on the process's disk; each draws the revision of a new incarnation. */
export async function createPartition(w: World): Promise<Partition> {
  await w.disk.mkdirp(dataPath);
  return await Partition.create(
    partitionDisk(w),
    w.clock,
    new Rng(streamSeed(w.seed, rngStreams.partitionRevision * ++w.incarnations)),
    dataPath,
    address,
    logConfigOf(w),
  );
}

/** The partition's log settings: the simulator's, with the scenario's age roll. */
function logConfigOf(w: World): LogConfig {
  return { ...logConfig, segmentMaxAgeMs: w.scenario.segmentMaxAgeMs ?? null };
}

/** The partition as the last crash left it on disk (recovery). */
export function openPartition(w: World): Promise<Partition> {
  return Partition.open(partitionDisk(w), w.clock, dataPath, address, logConfigOf(w), silentLogger());
}

/**
 * Builds the process's components around `partition`, wired as a shard wires them: the one place
 * where the simulator constructs a tier service, control log, chunk cache and housekeeping.
 */
export async function buildProcess(w: World, partition: Partition): Promise<SimProcess> {
  const { clock, disk, store } = w;
  const tier = new TierService({
    clock,
    rng: new Rng(streamSeed(w.seed, rngStreams.tier + w.crashes)),
    logger: silentLogger(),
    disk,
    store,
    bandwidth: new TokenBucket(clock, { rateBytesPerSec: "unlimited", waitersMax: 100, name: "upload" }),
    config: tierConfig,
  });
  tier.addPartition({
    key: partitionKey,
    partition,
    // The topic's options as the workload last changed them (read at each use, as a PATCH applies).
    tiered: () => w.options.tiered,
    envelope: () => ({ ageMs: null, sizeBytes: w.options.localSizeBytes }),
  });
  const control = await LocalControlLog.open(disk, controlLogPath);
  await tier.attachControlLog(control);
  const cache = await ChunkCache.open({
    disk,
    store,
    clock,
    logger: silentLogger(),
    dir: cacheDir,
    config: {
      budgetBytes: w.scenario.cacheBudgetBytes ?? 256 * 1024,
      objectsMax: 64,
      lowWatermarkPercent: 80,
      trimMinIntervalMs: 1000,
    },
    fetchTimeoutMs: 5000,
    fetchDeadlineMs: 30_000,
    fetchSlots: new Semaphore({ permits: fetchConcurrency, waitersMax: 1000, name: "fetch" }),
    fetchBandwidth: new TokenBucket(clock, { rateBytesPerSec: "unlimited", waitersMax: 1000, name: "fetch" }),
  });
  // The broker lends each log its shard's write buffers; the simulated one does the same.
  partition.log.useWriteBuffers(
    new BufferPool({ bufferBytes: writeBufferBytes, buffersMax: writeBuffersMax }),
  );
  partition.log.attachRemoteReader(remoteReaderOf(partition, cache, disk));
  const housekeeping = new Housekeeping({
    clock,
    logger: silentLogger(),
    store,
    config: processHousekeepingConfig,
    sweepsOrphans: true,
    tier,
    requests: { requestsServed: 0 },
    incarnations: {
      incarnationTable: () => {
        const sb = partition.superblock;
        return new Map([[partitionKey, {
          createdRevision: sb.createdRevision,
          purgeGeneration: sb.purgeGeneration,
          deletedUpToOffset: sb.deletedUpToOffset,
        }]]);
      },
    },
  });
  return { partition, tier, control, cache, housekeeping };
}

/** One tick of the shard at `nowMs`: the log, the tier service, the cache and housekeeping. */
export function tickProcess(p: SimProcess, nowMs: number): void {
  p.partition.log.onTick(nowMs);
  p.tier.onTick(nowMs);
  p.cache.onTick(nowMs);
  p.housekeeping.onTick(nowMs);
}
