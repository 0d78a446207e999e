import type { ProducerEntry } from "../log/producers/producer_entry.ts";
import { refuseReadReplica } from "./metadata/metadata.ts";
import type { MessageInput } from "../log/batch/batch_codec.ts";
import { noProduceLimits } from "../log/batch/produced_batches.ts";
import { encodeTxnMarker, type TxnMarker } from "../log/batch/txn_marker.ts";
import { TooManyConsumersError } from "../log/partition/consumer_offsets.ts";
import { labelOf, type Partition, type PartitionAddress } from "../log/partition/partition.ts";
import type { LogStats } from "../log/segment/segment_chain.ts";
import type { BatchReadResult, ReadResult } from "../log/read/segment_reads.ts";
import {
  ConsumerLimitError,
  NotEnoughReplicasError,
  NotLeaderError,
  NotReplicatedError,
  ReplicationTimeoutError,
  ResourceNotFoundError,
  TieringDisabledError,
} from "./broker_errors.ts";
import type { Catalog, CatalogTopic } from "./catalog/catalog.ts";
import { partitionOfKey, type ShardSet } from "./shards/shard_runtime.ts";
import { translateDataErrors } from "./data_errors.ts";
import { mergeProgressOf } from "../tier/merge/merge_plan.ts";

/** A partition's log statistics with its shard, floors and where its bytes are. */
export interface PartitionStats extends LogStats {
  shard: number;
  tieredUpToOffset: number;
  deletedUpToOffset: number;
  localSizeBytes: number;
  remoteSizeBytes: number;
  /** The evicted segments, held only in the object store. */
  remoteSegments: number;
  /** Bytes of the evicted segments' indexes the shard's index cache holds for the partition now. */
  remoteIndexBytes: number;
  /** Remote segments that are merges, and small ones the merger may still join. */
  mergedSegments: number;
  smallRemoteSegments: number;
}

/** Where a poll starts: at an offset, or at the first message at or after a timestamp. */
export interface PollRequest {
  offset?: number;
  timestampMs?: number;
  count: number;
  maxBytes: number;
  /**
   * Read up to the log's end, past the high watermark: for a leader's own use of its whole log (a
   * leader never cuts its log, so what it holds will be committed), never for consumers.
   */
  toLogEnd?: boolean;
  /** read_committed: below the last stable offset, without aborted transactions' records (offset reads only). */
  committed?: boolean;
}

/** A partition's offsets: its log start, what consumers may read up to, and its log's end. */
export interface OffsetRange {
  start: number;
  /** The high watermark: consumers read below it (a single node: the log's end). */
  next: number;
  /** The log's end: above `next` on a leader whose followers have not fetched everything yet. */
  end: number;
}

/** How an acks=all produce waits for its replicas, longest. */
export const replicationWaitMsMax = 60_000;

/** Where a produce's messages went: their partition, the first one's offset, and how many. */
export interface ProduceResult {
  partition: number;
  baseOffset: number;
  count: number;
}

/**
 * What serving a partition asks of this node's leadership: that it leads (reads, acks 0 and 1), or
 * also that `min_insync_replicas` are in sync (an acks=all produce, and every HTTP produce).
 */
type LeaderCheck = "leading" | "leading_with_min_insync";

/**
 * The operations on messages and offsets, addressed by stream, topic and partition names: each
 * finds its partition in the catalog and runs on the partition's shard. Results are typed; every
 * refusal is one of the broker's errors (`broker_errors.ts`), with the log's or store's as cause.
 */
export class DataPlane {
  readonly #catalog: Catalog;
  readonly #shards: ShardSet;
  readonly #replication: Replication;
  /** The last partition a keyless produce went to, per topic. */
  readonly #roundRobin = new WeakMap<CatalogTopic, number>();

  constructor(catalog: Catalog, shards: ShardSet, replication: Replication = singleNode) {
    this.#catalog = catalog;
    this.#shards = shards;
    this.#replication = replication;
  }

  /** Appends to `partitionId`, or to the key's partition, or round robin when the first message has no key. */
  async produce(
    streamName: string,
    topicName: string,
    partitionId: number | undefined,
    messages: MessageInput[],
  ): Promise<ProduceResult> {
    const topic = this.#catalog.topic(streamName, topicName);
    refuseReadReplica(topic.meta, `${streamName}/${topicName}`, "produce to");
    const id = partitionId ?? this.#choosePartition(topic, messages[0]!.key);
    const partition = this.#led(this.#catalog.openPartition(topic, id), "leading_with_min_insync");
    this.#shards.shardOf(partition.address).countRequest();
    const result = await translateDataErrors(() => partition.log.append(messages));
    // Over HTTP a produce is acknowledged once every in-sync replica holds it.
    await this.#awaitReplicated(partition, result.baseOffset + result.count, replicationWaitMsMax);
    return { partition: id, baseOffset: result.baseOffset, count: result.count };
  }

  /**
   * Appends the Kafka record batches a producer sent for one partition, kept as sent; the log
   * checks them and refuses them all when one fails (`RecordBatchError`).
   */
  async produceBatches(
    streamName: string,
    topicName: string,
    partitionId: number,
    records: Uint8Array,
    acks: 0 | 1 | -1 = 1,
    timeoutMs = replicationWaitMsMax,
  ): Promise<ProduceResult> {
    const topic = this.#catalog.topic(streamName, topicName);
    refuseReadReplica(topic.meta, `${streamName}/${topicName}`, "produce to");
    const partition = this.#led(
      this.#catalog.openPartition(topic, partitionId),
      acks === -1 ? "leading_with_min_insync" : "leading",
    );
    const shard = this.#shards.shardOf(partition.address);
    shard.countRequest();
    // The batches' checks (CRC32C over every byte, the records' framing) are CPU work: a piece of
    // about 1 MiB on each of the gate's turns, so that neither a large produce nor a request for many
    // partitions holds the loop for more than one piece.
    await shard.pieceGate.turn();
    const checks = { batchBytesMax: topic.meta.options.maxMessageBytes, turn: () => shard.pieceGate.turn() };
    const result = await translateDataErrors(() => partition.log.appendRecordBatches(records, checks));
    if (acks === -1) {
      await this.#awaitReplicated(
        partition,
        result.baseOffset + result.count,
        Math.min(timeoutMs, replicationWaitMsMax),
      );
    }
    return { partition: partitionId, baseOffset: result.baseOffset, count: result.count };
  }

  /**
   * Writes a transaction's marker (its coordinator's COMMIT or ABORT) to a partition this node
   * leads, acknowledged once every in-sync replica holds it; resolves with its offset. A marker of
   * an epoch older than the partition's producer is refused (`ProducerRefusedError`, Kafka's
   * INVALID_PRODUCER_EPOCH).
   */
  async writeTxnMarker(streamName: string, topicName: string, partitionId: number, marker: TxnMarker) {
    const topic = this.#catalog.topic(streamName, topicName);
    refuseReadReplica(topic.meta, `${streamName}/${topicName}`, "write a transaction marker to");
    const partition = this.#led(this.#catalog.openPartition(topic, partitionId), "leading_with_min_insync");
    const batch = encodeTxnMarker(marker);
    const result = await translateDataErrors(() =>
      partition.log.appendRecordBatches(batch, noProduceLimits, "coordinator")
    );
    await this.#awaitReplicated(partition, result.baseOffset + result.count, replicationWaitMsMax);
    return result.baseOffset;
  }

  /** Whether this node leads the partition now, and under which epoch (`Replication.leadership`). */
  leadership(streamName: string, topicName: string, partitionId: number): Leadership {
    const topic = this.#catalog.topic(streamName, topicName);
    return this.#replication.leadership(this.#catalog.openPartition(topic, partitionId).address);
  }

  /** A partition's log start, high watermark and log end (Kafka's log start offset and high watermark). */
  offsetRange(streamName: string, topicName: string, partitionId: number): OffsetRange {
    const log = this.#partition(streamName, topicName, partitionId).log;
    return { start: log.firstOffset, next: log.highWatermark, end: log.nextOffset };
  }

  /**
   * Deletes the partition's sealed segments that end below `offset`, as far as whole segments go
   * (Kafka's DeleteRecords, at segment grain): its log start moves up to the first segment kept.
   */
  async deleteRecordsBelow(streamName: string, topicName: string, partitionId: number, offset: number) {
    const partition = this.#partition(streamName, topicName, partitionId);
    await partition.applyDeletedUpTo({
      kind: "advance_deleted_up_to",
      partition: labelOf(partition.address),
      purgeGeneration: partition.superblock.purgeGeneration,
      upToOffset: offset,
    });
  }

  /**
   * Whole batches from the one holding `offset`, as stored, for a Kafka fetch (`PartitionLog.readBatches`),
   * below the high watermark, or below `endOffset` when given (a read_committed fetch's last stable offset).
   */
  async fetchBatches(
    streamName: string,
    topicName: string,
    partitionId: number,
    offset: number,
    maxBytes: number,
    endOffset?: number,
  ): Promise<BatchReadResult> {
    const partition = this.#partition(streamName, topicName, partitionId);
    const shard = this.#shards.shardOf(partition.address);
    shard.countRequest();
    const result = await translateDataErrors(() => partition.log.readBatches(offset, maxBytes, endOffset));
    // Like a poll's encoding, the answer's assembly is a piece of work on the gate's turn.
    if (result.batches.length > 0) await shard.pieceGate.turn();
    return result;
  }

  /** The partition's last stable offset (Kafka's LSO): a read_committed fetch reads below it. */
  lastStableOffset(streamName: string, topicName: string, partitionId: number): number {
    return this.#partition(streamName, topicName, partitionId).log.lastStableOffset;
  }

  /** The aborted transactions a read_committed fetch of `[fromOffset, upperBoundOffset)` lists. */
  abortedTxns(
    streamName: string,
    topicName: string,
    partitionId: number,
    fromOffset: number,
    upperBoundOffset: number,
  ) {
    const log = this.#partition(streamName, topicName, partitionId).log;
    return translateDataErrors(() => log.abortedTxns(fromOffset, upperBoundOffset));
  }

  /** Resolves once the partition's end passes `afterOffset`, or after `timeoutMs`. */
  waitForAppend(
    streamName: string,
    topicName: string,
    partitionId: number,
    afterOffset: number,
    timeoutMs: number,
  ): Promise<void> {
    return this.#partition(streamName, topicName, partitionId).log.waitForAppend(afterOffset, timeoutMs);
  }

  /** The partition's idempotent producers as its log holds them (DescribeProducers), by producer id. */
  producers(streamName: string, topicName: string, partitionId: number): ProducerEntry[] {
    const entries = this.#partition(streamName, topicName, partitionId).log.producers.snapshot();
    return entries.sort((a, b) => a.producerId - b.producerId);
  }

  /** The offset of the partition's first message stamped at or after `timestampUs`. */
  offsetForTimestamp(streamName: string, topicName: string, partitionId: number, timestampUs: number) {
    const log = this.#partition(streamName, topicName, partitionId).log;
    return translateDataErrors(() => log.offsetForTimestamp(timestampUs));
  }

  async poll(
    streamName: string,
    topicName: string,
    partitionId: number,
    request: PollRequest,
  ): Promise<ReadResult> {
    const partition = this.#partition(streamName, topicName, partitionId);
    const shard = this.#shards.shardOf(partition.address);
    shard.countRequest();
    const result = await translateDataErrors(() =>
      request.timestampMs !== undefined
        ? partition.log.readFromTimestamp(request.timestampMs * 1000, request.count, request.maxBytes)
        : request.committed === true
        ? partition.log.readCommitted(request.offset ?? 0, request.count, request.maxBytes)
        : partition.log.read(
          request.offset ?? 0,
          request.count,
          request.maxBytes,
          request.toLogEnd === true ? partition.log.nextOffset : undefined,
        )
    );
    // The answer's encoding (up to `max_bytes` of messages) is a piece of CPU work: it runs on the
    // gate's turn, which the caller's synchronous encode continues, so 32 polls finishing together
    // cannot put 32 encodings into one turn of the loop ahead of the tick.
    if (result.messages.length > 0) await shard.pieceGate.turn();
    return result;
  }

  /** Resolves true once every message below `offset` is durable in the object store, false at the timeout. */
  awaitTiered(
    streamName: string,
    topicName: string,
    partitionId: number,
    offset: number,
    timeoutMs: number,
  ): Promise<boolean> {
    const partition = this.#partition(streamName, topicName, partitionId);
    const tier = this.#shards.shardOf(partition.address).tier;
    if (tier === null) {
      throw new TieringDisabledError("Cannot await the tiered floor: tiered storage is not enabled");
    }
    return translateDataErrors(() => tier.awaitFloor(labelOf(partition.address), offset, timeoutMs));
  }

  partitionStats(streamName: string, topicName: string, partitionId: number): PartitionStats {
    const partition = this.#partition(streamName, topicName, partitionId);
    const stats = partition.log.stats();
    const remote = partition.log.remoteSizeBytes;
    return {
      ...stats,
      shard: this.#shards.shardOf(partition.address).id,
      tieredUpToOffset: partition.superblock.tieredUpToOffset,
      deletedUpToOffset: partition.superblock.deletedUpToOffset,
      localSizeBytes: stats.sizeBytes - remote,
      remoteSizeBytes: remote,
      remoteSegments: partition.log.remoteSegments,
      remoteIndexBytes: partition.log.remoteIndexBytes,
      ...mergeProgressOf(partition.log.segments, partition.log.config.segmentSizeBytes),
    };
  }

  async storeConsumerOffset(
    streamName: string,
    topicName: string,
    partitionId: number,
    consumer: string,
    offset: number,
  ): Promise<void> {
    const partition = this.#partition(streamName, topicName, partitionId);
    try {
      await partition.offsets.set(consumer, offset);
    } catch (error) {
      if (error instanceof TooManyConsumersError) {
        throw new ConsumerLimitError(error.message, { cause: error });
      }
      throw error;
    }
  }

  consumerOffset(streamName: string, topicName: string, partitionId: number, consumer: string): number {
    const partition = this.#partition(streamName, topicName, partitionId);
    const offset = partition.offsets.get(consumer);
    if (offset === null) {
      throw new ResourceNotFoundError(`Cannot get offset of consumer ${consumer}: none is stored`);
    }
    return offset;
  }

  /**
   * Deletes every message of the topic. Refused in a cluster (`NotReplicatedError`): a purge is not
   * replicated yet, and one made on the leader alone would leave its followers' copies behind.
   */
  async purgeTopic(streamName: string, topicName: string): Promise<void> {
    if (this.#replication.clustered) {
      throw new NotReplicatedError(
        `Cannot purge ${streamName}/${topicName} in cluster mode: a purge is not replicated to the partitions' followers yet`,
      );
    }
    refuseReadReplica(this.#catalog.topic(streamName, topicName).meta, `${streamName}/${topicName}`, "purge");
    await this.#catalog.purgeTopic(streamName, topicName);
  }

  /** The partition, led here: served to producers and consumers. */
  #partition(streamName: string, topicName: string, partitionId: number): Partition {
    const topic = this.#catalog.topic(streamName, topicName);
    return this.#led(this.#catalog.openPartition(topic, partitionId), "leading");
  }

  /**
   * The partition if this node leads it, else `NotLeaderError`; with `leading_with_min_insync` (an
   * acks=all produce), also `NotEnoughReplicasError` when fewer than `min_insync_replicas` are in
   * sync (nothing written).
   */
  #led(partition: Partition, check: LeaderCheck): Partition {
    const leadership = this.#replication.leadership(partition.address);
    const label = labelOf(partition.address);
    if (leadership.kind === "notLeader") {
      const who = leadership.leaderId === null
        ? "no node leads it now"
        : `node ${leadership.leaderId} leads it`;
      throw new NotLeaderError(`Cannot serve partition ${label} here: ${who}`, leadership.leaderId);
    }
    if (check === "leading_with_min_insync" && leadership.isrSize < leadership.minInsyncReplicas) {
      throw new NotEnoughReplicasError(
        `Cannot produce to ${label} with acks=all: ${leadership.isrSize} in sync, ${leadership.minInsyncReplicas} needed`,
        false,
      );
    }
    return partition;
  }

  async #awaitReplicated(partition: Partition, endOffset: number, timeoutMs: number): Promise<void> {
    const label = labelOf(partition.address);
    const outcome = await this.#replication.awaitReplicated(partition.address, endOffset, timeoutMs);
    switch (outcome) {
      case "replicated":
        return;
      case "notLeader":
        throw new NotLeaderError(
          `Cannot acknowledge the produce to ${label}: this node stopped leading it`,
          null,
        );
      case "notEnoughReplicas":
        throw new NotEnoughReplicasError(
          `Cannot acknowledge the produce to ${label}: the in-sync set shrank below min_insync_replicas`,
          true,
        );
      case "timeout":
        throw new ReplicationTimeoutError(
          `Cannot acknowledge the produce to ${label}: its replicas did not hold it within ${timeoutMs} ms`,
        );
    }
  }

  /**
   * The key's partition; without a key the next in round robin among the partitions this node
   * leads (all of them on a single node), so that a keyless produce is never sent elsewhere.
   */
  #choosePartition(topic: CatalogTopic, key: string | Uint8Array | null): number {
    if (key !== null) return partitionOfKey(key, topic.slots.length);
    const count = topic.slots.length;
    const last = this.#roundRobin.get(topic) ?? -1;
    for (let step = 1; step <= count; step++) {
      const candidate = (last + step) % count;
      const address = { streamId: topic.streamId, topicId: topic.meta.id, partitionId: candidate };
      if (step < count && this.#replication.leadership(address).kind !== "leader") continue;
      this.#roundRobin.set(topic, candidate);
      return candidate;
    }
    return (last + 1) % count;
  }
}

/** Whether this node may serve a partition's produce and consumer reads now. */
export type Leadership =
  | {
    kind: "leader";
    leaderEpoch: number;
    /** In-sync replicas now, this one among them. */
    isrSize: number;
    /** `[cluster] min_insync_replicas`: an acks=all produce needs this many in sync. */
    minInsyncReplicas: number;
  }
  /** Another node leads (`leaderId`), or none does now (null): the client asks elsewhere or later. */
  | { kind: "notLeader"; leaderId: number | null };

/** How an acks=all produce's wait for its replicas ended. */
export type ReplicatedOutcome = "replicated" | "notEnoughReplicas" | "notLeader" | "timeout";

/**
 * Replication as the data plane sees it: who leads each partition, and when an append is held by
 * every in-sync replica. A single node leads everything and its appends are replicated once
 * written (`singleNode`); a cluster node answers from its replica manager.
 */
export interface Replication {
  /** True on a cluster node: the partitions have replicas on other nodes. */
  readonly clustered: boolean;
  leadership(address: PartitionAddress): Leadership;
  /**
   * Resolves once the partition's high watermark reaches `endOffset` with at least
   * `min_insync_replicas` in sync, or with why not: this node stopped leading, the in-sync set
   * shrank below the minimum, or `timeoutMs` passed.
   */
  awaitReplicated(
    address: PartitionAddress,
    endOffset: number,
    timeoutMs: number,
  ): Promise<ReplicatedOutcome>;
}

/** One node: it leads every partition, and a written append is as replicated as it gets. */
export const singleNode: Replication = {
  clustered: false,
  leadership: () => ({ kind: "leader", leaderEpoch: 0, isrSize: 1, minInsyncReplicas: 1 }),
  awaitReplicated: () => Promise.resolve("replicated"),
};
