import type { HousekeepingConfig } from "../config/config.ts";
import type { LogConfig } from "../log/log_config.ts";

/** The simulated shard's settings: small segments, chunks and pieces, so a short run exercises them all. */

export const address = { streamId: 1, topicId: 1, partitionId: 0 };
/** The partition's key in the tier service and housekeeping: `stream/topic/partition`. */
export const partitionKey = "1/1/0";
/** The bucket's key prefix and the cluster id its keys carry. */
export const bucketPrefix = "strata";
export const clusterId = "sim";
export const dataPath = "/data";
/**
 * The partition's bound on files held between uses: one, so its `.log` and `.index` take turns and
 * every switch closes one (synced first when written) for the other, crashes falling among them.
 */
export const maxOpenFiles = 1;
/** The control log of the simulated shard (its only one). */
export const controlLogPath = `${dataPath}/control/shard-0.log`;
/** The chunk cache's directory, outside the data directory: a wipe keeps it, a cold restart loses it. */
export const cacheDir = "/cache";
export const logConfig: LogConfig = {
  segmentSizeBytes: 32 * 1024,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 1024,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 1000,
};
export const payloadBytes = 700;
/** Virtual time after the faults stop in which uploads must catch up (liveness). */
export const recoveryMs = 120_000;
export const stepMs = 10;
export const cacheChunkBytes = 16 * 1024;
export const uploadPieceBytes = 8 * 1024;
export const uploadConcurrency = 2;
export const fetchConcurrency = 4;
/** Windows of a poll are at most its byte budget (64 KiB) or a chunk; pieces are smaller. */
export const ioBytesPerTaskMax = 64 * 1024;
/**
 * What one loop iteration may move through the disk: one unit of each concurrent task (uploads,
 * fetches, the writer, a poll, housekeeping's verify), each at most a window; a task that read or
 * wrote a whole segment or chunk set in one stretch would pass it.
 */
export const stretchBytesBound = (uploadConcurrency + fetchConcurrency + 3) * ioBytesPerTaskMax;
export const housekeepingConfig: HousekeepingConfig = {
  mergeSegments: true,
  mergeIntervalMs: 1000,
  intervalMs: 2000,
  idleTimeoutMs: 1000,
  idleThresholdRps: 1_000_000,
  requestsPerRunMax: 1000,
  deleteBatchPerPass: 100,
  deletePendingPerPartitionMax: 5000,
  deleteGraceMs: 5000,
  orphanSweepIntervalMs: 5000,
  manifestUploadIntervalMs: 30_000,
  verifyIntervalMs: 30_000,
};
/** The longest deadline of one store request (a PUT's), retries included. */
export const requestDeadlineMsMax = 90_000;
/**
 * Virtual time at the end in which GC must collect every orphan: a housekeeping run may first wait out
 * a request whose reply was lost (up to its deadline), then four sweeps past the grace.
 */
export const gcWindowMs = requestDeadlineMsMax +
  4 * (housekeepingConfig.deleteGraceMs + housekeepingConfig.orphanSweepIntervalMs);
