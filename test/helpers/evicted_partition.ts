import type { Test } from "tap";
import type { LogConfig } from "../../src/log/log_config.ts";
import { Partition } from "../../src/log/partition/partition.ts";
import { defaultRetryProfiles } from "../../src/objectstore/retry_policy.ts";
import { RetryingObjectStore } from "../../src/objectstore/retrying_object_store.ts";
import { SimObjectStore } from "../../src/objectstore/sim_object_store.ts";
import type { BufferPool } from "../../src/runtime/memory/buffers.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { createMetricsRegistry } from "../../src/runtime/metrics/metrics.ts";
import type { Disk } from "../../src/runtime/disk/disk.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import type { PieceGate } from "../../src/runtime/cooperation/piece_gate.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { Semaphore } from "../../src/runtime/cooperation/semaphore.ts";
import { TokenBucket } from "../../src/runtime/cooperation/token_bucket.ts";
import { CacheMetrics } from "../../src/tier/cache/cache_metrics.ts";
import { ChunkCache } from "../../src/tier/cache/chunk_cache.ts";
import { segmentKeys } from "../../src/tier/bucket/object_keys.ts";
import { sealedSegmentOf, uploadSegment } from "../../src/tier/upload/segment_uploader.ts";
import { TierRemoteReader, type TierRemoteReaderOptions } from "../../src/tier/cache/tier_remote_reader.ts";
import { IndexCacheMetrics, RemoteIndexes } from "../../src/tier/cache/remote_indexes.ts";
import { tempDir } from "./temp_dir.ts";
import { WatchedClock } from "./watched_clock.ts";

// Reads of evicted segments: a partition whose sealed segments are in the sim store (which counts
// every GET) and no longer on local disk, read through a chunk cache and a tier remote reader.
await initCrc32c();
const baseLogConfig: LogConfig = {
  segmentSizeBytes: 200_000,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 4096,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 100,
};
export interface EvictedOptions {
  budgetBytes?: number;
  segmentSizeBytes?: number;
  messages?: number;
  chunkBytes?: number;
  readaheadChunksMax?: number;
  payloadBytes?: number;
  windowPool?: BufferPool;
  /** Virtual time before each append, so each message has a timestamp of its own; none by default. */
  msBetweenMessages?: number;
  /** The disk the chunk cache works on, around the partition's; the partition's by default. */
  cacheDisk?: (disk: Disk) => Disk;
}

/** A partition with sealed segments (4 by default) uploaded to the sim store and evicted. */
export async function evicted(t: Test, options: EvictedOptions = {}) {
  const budgetBytes = options.budgetBytes ?? 64 * 1024 * 1024;
  const chunkBytes = options.chunkBytes ?? 64 * 1024;
  const logConfig = { ...baseLogConfig, segmentSizeBytes: options.segmentSizeBytes ?? 200_000 };
  const disk = new NodeDisk();
  const data = tempDir(t);
  const clock = new WatchedClock();
  const partition = await Partition.create(disk, clock, new Rng(1), data, {
    streamId: 1,
    topicId: 1,
    partitionId: 0,
  }, logConfig);
  t.teardown(() => partition.close());
  // As a tiered partition's: each producer snapshot is held for its segment's upload.
  partition.log.holdProducerSnapshotsAbove(0);
  /** The wall-clock time of each append, in microseconds: message `i`'s timestamp. */
  const timestampsUs: number[] = [];
  for (let i = 0; i < (options.messages ?? 90); i++) {
    if (options.msBetweenMessages !== undefined) clock.advance(options.msBetweenMessages);
    timestampsUs.push(clock.wallMs() * 1000);
    await partition.log.append([{
      key: null,
      headers: {},
      payload: new Uint8Array(options.payloadBytes ?? 10_000).fill(i),
    }]);
  }
  const sim = new SimObjectStore(clock, new Rng(2));
  const store = new RetryingObjectStore(sim, clock, new Rng(3), defaultRetryProfiles, {
    putMs: 90_000,
    getMs: 5000,
    otherMs: 30_000,
  }, null);
  const sb = partition.superblock;
  const incarnation = {
    prefix: "strata",
    clusterId: "c1",
    streamId: 1,
    topicId: 1,
    partitionId: 0,
    createdRevision: sb.createdRevision,
    purgeGeneration: 0,
  };
  const sealed = partition.log.segments.filter((s) => s.sealed);
  for (const s of sealed) {
    await uploadSegment(
      {
        disk,
        store,
        pieceBytes: 65536,
        bandwidth: new TokenBucket(clock, { rateBytesPerSec: "unlimited", waitersMax: 1, name: "b" }),
      },
      sealedSegmentOf(s),
      segmentKeys(incarnation, s.startOffset, null),
      1e12,
    );
  }
  const floor = sealed.at(-1)!.endOffset + 1;
  // A pass evicts a bounded number of segments: passes until every sealed one is remote.
  const identity = { createdRevision: sb.createdRevision, purgeGeneration: 0 };
  for (let passes = 0; passes < sealed.length; passes++) {
    if (await partition.log.evictLocal(floor, identity, () => false) === 0) break;
  }
  const cacheDir = `${data}/cache/shard-0`;
  const registry = createMetricsRegistry();
  const metrics = new CacheMetrics(registry);
  const indexMetrics = new IndexCacheMetrics(registry);
  const openCache = (gate?: PieceGate) =>
    ChunkCache.open({
      ...(gate !== undefined ? { gate } : {}),
      ...(options.windowPool !== undefined ? { windowPool: options.windowPool } : {}),
      disk: options.cacheDisk?.(disk) ?? disk,
      store,
      clock,
      logger: silentLogger(),
      metrics,
      dir: cacheDir,
      config: {
        budgetBytes,
        objectsMax: 1000,
        lowWatermarkPercent: 80,
        trimMinIntervalMs: 0,
      },
      fetchTimeoutMs: 5000,
      fetchDeadlineMs: 60_000,
      fetchSlots: new Semaphore({ permits: 4, waitersMax: 100, name: "fetch slot" }),
      fetchBandwidth: new TokenBucket(clock, {
        rateBytesPerSec: "unlimited",
        waitersMax: 100,
        name: "fetch bandwidth",
      }),
    });
  /** How a reader of `cache` reads: the fixture's keys and chunk size, and an index cache of its own. */
  const readerOptions = (cache: ChunkCache, indexBudgetBytes = 1 << 20): TierRemoteReaderOptions => ({
    prefix: "strata",
    clusterId: "c1",
    chunkBytes,
    readaheadChunksMax: options.readaheadChunksMax ?? 0,
    indexes: new RemoteIndexes({
      // A remote segment's `.index` lies beside its marker, on the partition's disk.
      disk,
      fetchIndex: (key, sizeBytes) => cache.fetchIndex(key, sizeBytes),
      budgetBytes: indexBudgetBytes,
      chunkBytes,
      logger: silentLogger(),
      metrics: indexMetrics,
    }),
    metrics,
  });
  /** The partition opened again from its directory, as a boot opens it, through `on`. */
  const reopen = (on: Disk = disk) =>
    Partition.open(on, new VirtualClock(), data, partition.address, logConfig, silentLogger());
  const attach = async (to: Partition = partition, gate?: PieceGate) => {
    const cache = await openCache(gate);
    to.log.attachRemoteReader(new TierRemoteReader(to, cache, readerOptions(cache)), gate);
    return cache;
  };
  return {
    partition,
    reopen,
    sim,
    store,
    attach,
    readerOptions,
    registry,
    cacheDir,
    floor,
    incarnation,
    clock,
    disk,
    data,
    logConfig,
    metrics,
    timestampsUs,
  };
}

/** A 10 kB message of the fixture, each byte its offset's low byte. */
export const payloadOk = (m: { offset: number; payload: Uint8Array | null }) =>
  m.payload!.length === 10_000 && m.payload!.every((b) => b === (m.offset & 0xff));
