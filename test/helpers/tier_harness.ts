import type { TopicFacts } from "../../src/tier/bucket/topic_manifest.ts";
import type { Test } from "tap";
import type { HousekeepingConfig } from "../../src/config/config.ts";
import type { Disk } from "../../src/runtime/disk/disk.ts";
import type { PieceGate } from "../../src/runtime/cooperation/piece_gate.ts";
import type { LogConfig } from "../../src/log/log_config.ts";
import { Partition } from "../../src/log/partition/partition.ts";
import { defaultRetryProfiles } from "../../src/objectstore/retry_policy.ts";
import { RetryingObjectStore } from "../../src/objectstore/retrying_object_store.ts";
import { SimObjectStore } from "../../src/objectstore/sim_object_store.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { createMetricsRegistry } from "../../src/runtime/metrics/metrics.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { TokenBucket } from "../../src/runtime/cooperation/token_bucket.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import type { ControlLog } from "../../src/tier/control/control_log.ts";
import { LocalControlLog } from "../../src/tier/control/local_control_log.ts";
import { Housekeeping } from "../../src/tier/housekeeping/housekeeping.ts";
import { HousekeepingMetrics } from "../../src/tier/housekeeping/housekeeping_metrics.ts";
import type { IncarnationTable } from "../../src/tier/bucket/object_class.ts";
import type { LocalEnvelope } from "../../src/log/retention/local_retention.ts";
import { TierMetrics } from "../../src/tier/tier_metrics.ts";
import { TierService } from "../../src/tier/tier_service.ts";
import type { TierLeadership } from "../../src/tier/tier_leadership.ts";
import { InFlightDisk } from "./disks/in_flight_disk.ts";
import { virtualTime } from "./wait_for.ts";
import { tempDir } from "./temp_dir.ts";

// The tier service shell (and, on request, housekeeping) with the sim store, a real partition on
// disk and virtual time.
await initCrc32c();
export const logConfig: LogConfig = {
  segmentSizeBytes: 50_000,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 4096,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 1000,
};

export const housekeepingDefaults: HousekeepingConfig = {
  intervalMs: 300_000,
  idleTimeoutMs: 10_000,
  idleThresholdRps: 10,
  requestsPerRunMax: 5000,
  deleteBatchPerPass: 300,
  deletePendingPerPartitionMax: 5000,
  deleteGraceMs: 60_000,
  orphanSweepIntervalMs: 3_600_000,
  manifestUploadIntervalMs: 60_000,
  verifyIntervalMs: 3_600_000,
  mergeSegments: false,
  mergeIntervalMs: 60_000,
};

/** Bound on the real time one wait spends waiting for disk I/O: a stuck operation ends the wait, not the test run. */
const ioWaitMaxMs = 120_000;

export interface TierHarnessOptions {
  /** Runs housekeeping beside the tier service, as shard 0 (which sweeps orphans). */
  housekeeping?: Partial<HousekeepingConfig>;
  /** The partitions the orphan sweep takes as live; the harness's own partition by default. */
  liveTable?: () => IncarnationTable;
  /** The disk under the harness's in-flight count; a fresh `NodeDisk` by default. */
  disk?: Disk;
  /** The tier service's piece gate; none by default. */
  pieceGate?: PieceGate;
  /** What the tier service gets as its control log, made from the local one; the local one by default. */
  controlLog?: (local: LocalControlLog) => ControlLog;
  /** The tier service's `upload_stall_after`; 120 s by default. */
  uploadStallAfterMs?: number;
  /** Whether housekeeping sweeps for orphans (read at each tick when a function); true by default. */
  sweepsOrphans?: boolean | (() => boolean);
  /** Which partitions the service leads, as in a cluster; absent: all of them, as on a single node. */
  leadership?: TierLeadership;
  /** The partition's topic facts (it is partition 0), for the topic manifest; none by default. */
  topicFacts?: () => TopicFacts | null;
}

export async function tierHarness(t: Test, envelope: LocalEnvelope, options: TierHarnessOptions = {}) {
  const disk = new InFlightDisk(options.disk ?? new NodeDisk());
  const data = tempDir(t);
  const clock = new VirtualClock();
  const partition = await Partition.create(disk, clock, new Rng(1), data, {
    streamId: 1,
    topicId: 1,
    partitionId: 0,
  }, logConfig);
  t.teardown(() => partition.close());
  const sim = new SimObjectStore(clock, new Rng(2));
  const store = new RetryingObjectStore(sim, clock, new Rng(3), defaultRetryProfiles, {
    putMs: 90_000,
    getMs: 5000,
    otherMs: 30_000,
  }, null);
  const registry = createMetricsRegistry();
  const tier = new TierService({
    clock,
    rng: new Rng(4),
    logger: silentLogger(),
    disk,
    store,
    bandwidth: new TokenBucket(clock, {
      rateBytesPerSec: "unlimited",
      waitersMax: 100,
      name: "upload bandwidth",
    }),
    config: {
      prefix: "strata",
      clusterId: "c1",
      uploadConcurrency: 2,
      uploadPieceBytes: 16 * 1024,
      uploadLoopBackoffMaxMs: 10_000,
      segmentUploadTimeoutMs: 90_000,
      uploadStallAfterMs: options.uploadStallAfterMs ?? 120_000,
      retry: defaultRetryProfiles,
    },
    metrics: new TierMetrics(registry),
    ...(options.pieceGate !== undefined ? { pieceGate: options.pieceGate } : {}),
    ...(options.leadership !== undefined ? { leadership: options.leadership } : {}),
  });
  tier.addPartition({
    key: "1/1/0",
    partition,
    tiered: () => true,
    envelope: () => envelope,
    ...(options.topicFacts !== undefined ? { topicFacts: options.topicFacts } : {}),
  });
  const control = await LocalControlLog.open(disk, `${data}/control/shard-0.log`);
  t.teardown(() => control.close());
  await tier.attachControlLog(options.controlLog?.(control) ?? control);
  const housekeeping = options.housekeeping === undefined ? null : new Housekeeping({
    clock,
    logger: silentLogger(),
    store,
    config: {
      ...housekeepingDefaults,
      ...options.housekeeping,
      prefix: "strata",
      clusterId: "c1",
      segmentUploadTimeoutMs: 90_000,
    },
    sweepsOrphans: options.sweepsOrphans ?? true,
    tier,
    requests: { requestsServed: 0 },
    incarnations: {
      incarnationTable: options.liveTable ?? (() => {
        const sb = partition.superblock;
        return new Map([["1/1/0", {
          createdRevision: sb.createdRevision,
          purgeGeneration: sb.purgeGeneration,
          deletedUpToOffset: sb.deletedUpToOffset,
        }]]);
      }),
    },
    metrics: new HousekeepingMetrics(registry),
  });
  if (housekeeping !== null) t.teardown(() => housekeeping.stop());
  const produce = async (n: number) => {
    for (let i = 0; i < n; i++) {
      await partition.log.append([{ key: null, headers: {}, payload: new Uint8Array(10_000).fill(i % 256) }]);
    }
  };
  /**
   * Ticks every 10 ms of virtual time, each tick handed to the tier service and housekeeping, with
   * 1 ms of real time after each tick for the work it started. The clock stands still while disk
   * operations are in flight (until the disk is quiet, for at most `ioWaitMaxMs` of real time per
   * wait), so a slow disk slows the test instead of letting deadlines and intervals in virtual time
   * expire under work that has not had its real time yet. A wait may take 3000 ticks (30 virtual s)
   * unless told otherwise.
   */
  const ticks = (deadlineMs = 30_000) => ({
    deadlineMs,
    pace: virtualTime(clock, 10, {
      settleMs: 1,
      quietDisk: disk,
      ioWaitMaxMs,
      onStep: (nowMs) => {
        tier.onTick(nowMs);
        housekeeping?.onTick(nowMs);
      },
    }),
  });
  const lastSealedEnd = () => partition.log.segments.filter((s) => s.sealed).at(-1)!.endOffset;
  return { partition, sim, store, tier, clock, produce, ticks, lastSealedEnd, housekeeping, registry };
}
