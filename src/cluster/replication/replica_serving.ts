import { rethrowBug } from "../../runtime/assert.ts";
import type { BatchReadResult } from "../../log/read/segment_reads.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { Logger } from "../../runtime/logger.ts";
import type {
  ReplicaFetchPartitionRequest,
  ReplicaFetchPartitionResponse,
  ReplicaFetchRequest,
  ReplicaFetchResponse,
} from "./replica_fetch.ts";
import type { ReplicaManager } from "./replica_manager.ts";

/** Longest wait a replica fetch may ask for. */
export const replicaFetchWaitMsMax = 5000;

/** A leader's answer to a replica fetch, with the release of the log reads its batches lend. */
export interface ReplicaFetchServed {
  response: ReplicaFetchResponse;
  /** Partitions answered with an error. */
  errorCount: number;
  release(): void;
}

/**
 * The leader's side of a replica fetch, whatever carries it (the Kafka listener, the simulator's
 * network); the caller has checked the follower's credential. Each partition is refused unless this
 * node leads it under the epoch the follower names; otherwise the follower's progress is taken (it
 * moves the high watermark and the in-sync set) and the batches from its offset to the log's end
 * go back, with where the leader's segments start. With nothing new anywhere, the fetch waits up to
 * `maxWaitMs` (at most `replicaFetchWaitMsMax`) for an append.
 */
export async function serveReplicaFetch(
  replicas: ReplicaManager,
  clock: Clock,
  request: ReplicaFetchRequest,
  logger: Logger,
): Promise<ReplicaFetchServed> {
  const deadlineMs = clock.nowMs() + Math.min(request.maxWaitMs, replicaFetchWaitMsMax);
  const readAll = () => readPartitions(replicas, request, logger);
  let answer = await readAll();
  if (answer.sizeBytes === 0 && !answer.refused && deadlineMs > clock.nowMs()) {
    answer.release();
    await waitForAnyLogEnd(replicas, request.partitions, deadlineMs - clock.nowMs(), clock);
    answer = await readAll();
  }
  const errorCount = answer.partitions.filter((p) => p.error !== "none").length;
  return { response: { error: "none", partitions: answer.partitions }, errorCount, release: answer.release };
}

interface Answer {
  partitions: ReplicaFetchPartitionResponse[];
  sizeBytes: number;
  refused: boolean;
  release(): void;
}

async function readPartitions(
  replicas: ReplicaManager,
  request: ReplicaFetchRequest,
  logger: Logger,
): Promise<Answer> {
  const { replicaId, partitions: requests, maxBytes } = request;
  const reads: BatchReadResult[] = [];
  const partitions: ReplicaFetchPartitionResponse[] = [];
  let sizeBytes = 0;
  let refused = false;
  for (const p of requests) {
    const budget = Math.max(1, maxBytes - sizeBytes);
    const { response, read } = await readPartition(
      replicas,
      replicaId,
      p,
      sizeBytes === 0 || budget > 1 ? budget : 0,
      logger,
    );
    if (read !== null) {
      reads.push(read);
      sizeBytes += read.sizeBytes;
    }
    refused ||= response.error !== "none";
    partitions.push(response);
  }
  return { partitions, sizeBytes, refused, release: () => reads.forEach((r) => r.release()) };
}

async function readPartition(
  replicas: ReplicaManager,
  replicaId: number,
  p: ReplicaFetchPartitionRequest,
  budgetBytes: number,
  logger: Logger,
): Promise<{ response: ReplicaFetchPartitionResponse; read: BatchReadResult | null }> {
  const empty = (error: ReplicaFetchPartitionResponse["error"], hw = -1, start = -1, end = -1) => ({
    address: p.address,
    error,
    highWatermark: hw,
    logStartOffset: start,
    logEndOffset: end,
    segmentStarts: [],
    records: [],
    divergingEpoch: null,
  });
  const led = replicas.ledFor(p.address, p.leaderEpoch);
  if (!led.ok) return { response: empty(led.reason), read: null };
  const log = led.partition.log;
  const [hw, start, end] = [log.highWatermark, log.firstOffset, log.nextOffset];
  // The follower's last batch must be of an epoch this log holds at least up to where the
  // follower is; otherwise it learns where this log's records of that epoch end, and cuts there.
  // Its offset is not progress then: it holds other records below it than this log does.
  if (p.fetchOffset > start) {
    const { epoch, endOffset } = log.leaderEpochs.endOffsetFor(p.lastFetchedEpoch, end);
    if (epoch !== p.lastFetchedEpoch || endOffset < p.fetchOffset) {
      return {
        response: { ...empty("none", hw, start, end), divergingEpoch: { epoch, endOffset } },
        read: null,
      };
    }
  }
  const taken = replicas.replicaFetched(p.address, replicaId, p.fetchOffset, p.leaderEpoch);
  if (!taken.ok) return { response: empty(taken.reason), read: null };
  if (p.fetchOffset > end || p.fetchOffset < start) {
    return { response: empty("offsetOutOfRange", hw, start, end), read: null };
  }
  if (p.fetchOffset === end || budgetBytes === 0) {
    return { response: empty("none", hw, start, end), read: null };
  }
  try {
    const read = await log.readBatches(p.fetchOffset, budgetBytes, end);
    const segmentStarts = log.segmentStartsIn(p.fetchOffset, read.nextOffset);
    return {
      response: { ...empty("none", log.highWatermark, start, end), segmentStarts, records: read.batches },
      read,
    };
  } catch (error) {
    rethrowBug(error, logger, "a read for a follower threw; the request stops", { partition: log.label });
    // The follower hears KAFKA_STORAGE_ERROR for this partition (counted among the API's errors)
    // and fetches again; the read failure itself is logged here, on the leader that met it.
    logger.warn("Cannot read a partition for a follower", { partition: log.label, error });
    return { response: empty("storage", hw, start, end), read: null };
  }
}

async function waitForAnyLogEnd(
  replicas: ReplicaManager,
  requests: readonly ReplicaFetchPartitionRequest[],
  waitMs: number,
  clock: Clock,
): Promise<void> {
  const waits: Promise<void>[] = [];
  for (const p of requests) {
    const partition = replicas.partition(p.address);
    if (partition !== null) waits.push(partition.log.waitForLogEnd(p.fetchOffset, waitMs));
  }
  if (waits.length === 0) waits.push(clock.sleep(waitMs));
  await Promise.race(waits);
}
