import type {
  ReplicaFetchPartitionRequest,
  ReplicaFetchPartitionResponse,
  ReplicaFetchResponse,
} from "../cluster/replica_fetch.ts";
import type { BatchReadResult } from "../log/batch_reads.ts";
import type { KafkaApi, KafkaClusterServing, KafkaServing } from "./kafka_api.ts";
import {
  encodeReplicaFetchResponse,
  readReplicaFetchRequest,
  replicaFetchApiKey,
  replicaFetchVersion,
} from "./replica_fetch_wire.ts";

/** Longest wait a replica fetch may ask for. */
export const replicaFetchWaitMsMax = 5000;

/**
 * ReplicaFetch, on a cluster node: a follower's fetch of the partitions this node leads. The
 * credential is checked first: a wrong one is answered with the authentication error and closes the
 * connection. Each partition is refused unless this node leads it under the epoch the follower
 * names; otherwise the follower's progress is taken (it moves the high watermark and the in-sync
 * set) and the batches from its offset to the log's end go back, with where the leader's segments
 * start. With nothing new anywhere, the fetch waits up to `max_wait_ms` for an append.
 */
export const replicaFetchApi: KafkaApi = {
  apiKey: replicaFetchApiKey,
  name: "replica_fetch",
  minVersion: replicaFetchVersion,
  maxVersion: replicaFetchVersion,
  async handle(header, body, serving) {
    const request = readReplicaFetchRequest(body);
    const cluster = serving.cluster;
    if (cluster === null || !cluster.verifyNode(request.replicaId, request.token)) {
      serving.logger.warn("a replica fetch's credentials were refused", { replica_id: request.replicaId });
      const refused: ReplicaFetchResponse = { error: "authentication", partitions: [] };
      return {
        pieces: encodeReplicaFetchResponse(header, refused),
        errorCount: 1,
        closeAfter: "authentication_failed",
      };
    }
    const deadlineMs = serving.clock.nowMs() + Math.min(request.maxWaitMs, replicaFetchWaitMsMax);
    let answer = await readAll(cluster, request.replicaId, request.partitions, request.maxBytes);
    if (answer.sizeBytes === 0 && !answer.refused && deadlineMs > serving.clock.nowMs()) {
      answer.release();
      await waitForAnyLogEnd(cluster, request.partitions, deadlineMs - serving.clock.nowMs(), serving);
      answer = await readAll(cluster, request.replicaId, request.partitions, request.maxBytes);
    }
    const response: ReplicaFetchResponse = { error: "none", partitions: answer.partitions };
    const errorCount = answer.partitions.filter((p) => p.error !== "none").length;
    return { pieces: encodeReplicaFetchResponse(header, response), errorCount, release: answer.release };
  },
};

interface Answer {
  partitions: ReplicaFetchPartitionResponse[];
  sizeBytes: number;
  refused: boolean;
  release(): void;
}

async function readAll(
  cluster: KafkaClusterServing,
  replicaId: number,
  requests: readonly ReplicaFetchPartitionRequest[],
  maxBytes: number,
): Promise<Answer> {
  const reads: BatchReadResult[] = [];
  const partitions: ReplicaFetchPartitionResponse[] = [];
  let sizeBytes = 0;
  let refused = false;
  for (const p of requests) {
    const budget = Math.max(1, maxBytes - sizeBytes);
    const { response, read } = await readPartition(
      cluster,
      replicaId,
      p,
      sizeBytes === 0 || budget > 1 ? budget : 0,
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
  cluster: KafkaClusterServing,
  replicaId: number,
  p: ReplicaFetchPartitionRequest,
  budgetBytes: number,
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
  const taken = cluster.replicas.replicaFetched(p.address, replicaId, p.fetchOffset, p.leaderEpoch);
  if (!taken.ok) return { response: empty(taken.reason), read: null };
  const log = taken.partition.log;
  const [hw, start, end] = [log.highWatermark, log.firstOffset, log.nextOffset];
  // The follower's last batch must be of an epoch this log holds at least up to where the
  // follower is; otherwise it learns where this log's records of that epoch end, and cuts there.
  if (p.fetchOffset > start) {
    const { epoch, endOffset } = log.leaderEpochs.endOffsetFor(p.lastFetchedEpoch, end);
    if (epoch !== p.lastFetchedEpoch || endOffset < p.fetchOffset) {
      return {
        response: { ...empty("none", hw, start, end), divergingEpoch: { epoch, endOffset } },
        read: null,
      };
    }
  }
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
  } catch {
    return { response: empty("storage", hw, start, end), read: null };
  }
}

async function waitForAnyLogEnd(
  cluster: KafkaClusterServing,
  requests: readonly ReplicaFetchPartitionRequest[],
  waitMs: number,
  serving: KafkaServing,
): Promise<void> {
  const waits: Promise<void>[] = [];
  for (const p of requests) {
    const partition = cluster.replicas.partition(p.address);
    if (partition !== null) waits.push(partition.log.waitForLogEnd(p.fetchOffset, waitMs));
  }
  if (waits.length === 0) waits.push(serving.clock.sleep(waitMs));
  await Promise.race(waits);
}
