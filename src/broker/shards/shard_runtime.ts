import {
  addProducerCounts,
  noProducerCounts,
  type ProducerCounts,
} from "../../log/producers/producer_states.ts";
import { labelOf, type Partition, type PartitionAddress } from "../../log/partition/partition.ts";
import { assert, isBug, rethrowBug } from "../../runtime/assert.ts";
import { readWindowBytesMax } from "../../log/read/scan_batches.ts";
import { BufferPool } from "../../runtime/memory/buffers.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import { DueHeap, DueLooks } from "../../runtime/cooperation/due_looks.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { PieceGate } from "../../runtime/cooperation/piece_gate.ts";
import type { Pump } from "../../runtime/cooperation/pump.ts";
import type { ChunkCache } from "../../tier/cache/chunk_cache.ts";
import type { ControlLog } from "../../tier/control/control_log.ts";
import type { Housekeeping, RequestCounter } from "../../tier/housekeeping/housekeeping.ts";
import { TierRemoteReader, type TierRemoteReaderOptions } from "../../tier/cache/tier_remote_reader.ts";
import type { TierService } from "../../tier/tier_service.ts";
import { HostedTieredPartition, type HostedTopic } from "../catalog/hosted_topic.ts";
import { nextRetentionLookWallMs, totalRetentionPass } from "./retention_pass.ts";
import type { PartitionHost } from "../catalog/catalog.ts";

const utf8 = new TextEncoder();

/**
 * FNV-1a, 32 bits, over UTF-8 text or bytes: a stable hash for partition placement and key routing
 * that never changes. A text key and its UTF-8 bytes hash alike.
 */
export function fnv1a32(input: string | Uint8Array): number {
  let hash = 0x811c9dc5;
  const bytes = typeof input === "string" ? utf8.encode(input) : input;
  for (const byte of bytes) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** The shard a partition lives on: a stable hash of its address, so it never moves between boots. */
export function shardIndexOf(address: PartitionAddress, shardCount: number): number {
  assert(shardCount >= 1, "Cannot place a partition: there are no shards");
  return fnv1a32(`${address.streamId}:${address.topicId}:${address.partitionId}`) % shardCount;
}

/** The partition a message with this key goes to: the same key always goes to the same partition. */
export function partitionOfKey(key: string | Uint8Array, partitions: number): number {
  assert(partitions >= 1, "Cannot place a message: the topic has no partitions");
  return fnv1a32(key) % partitions;
}

/**
 * Shutdown steps that must reach every resource whatever happens to the others: a shard whose
 * housekeeping fails to stop still closes its control log, and every other partition is still
 * synced when one fails to close.
 */

/** Runs `step` on each item in turn, whether or not an earlier one failed; resolves with the failures. */
export async function runEach<T>(items: Iterable<T>, step: (item: T) => Promise<void>): Promise<unknown[]> {
  const failures: unknown[] = [];
  for (const item of items) {
    try {
      await step(item);
    } catch (error) {
      failures.push(error);
    }
  }
  return failures;
}

/** Returns when nothing failed; throws the failure when one did, and an AggregateError of all when more did. */
export function throwFailures(what: string, failures: readonly unknown[]): void {
  if (failures.length === 0) return;
  if (failures.length === 1) throw failures[0];
  throw new AggregateError(failures, `Cannot ${what}: ${failures.length} steps failed`);
}

/**
 * How soon total retention looks again at a partition that was written, had its options changed,
 * or still has a front segment past its limits (a pass deleting, or the consumer barrier holding).
 */
export const retentionCheckIntervalMs = 1000;

/**
 * Longest time between two total-retention looks at a partition nothing happened to: a safety net
 * under the looks due by time or brought forward by a write, as long as Kafka's own retention check
 * (`log.retention.check.interval.ms`, 5 min).
 */
export const retentionIdleLookIntervalMs = 300_000;

/** Bound on the partition logs one tick serves (rolls, interval fsyncs); the rest wait a tick. */
export const logDutiesPerTickMax = 256;

/** Bound on the partitions one tick evaluates total retention for because their look is due. */
export const retentionChecksPerTickMax = 256;

/**
 * A partition log's write buffer: the batches of a write group are encoded into one and written
 * together. 1 MiB makes a group of small batches one write while eight per shard stay cheap to keep;
 * a larger batch gets a buffer of its own.
 */
export const writeBufferBytes = 1024 * 1024;
/**
 * Write buffers a shard lends at once (and keeps between writes): a partition that finds all of them out
 * encodes its batch into a buffer of the batch's size, so many partitions writing at once cost no more.
 */
export const writeBuffersMax = 8;

/**
 * Read windows (1 MiB each) a shard's Kafka fetches borrow at once at most, from its pool: a fetch of
 * 10 MiB takes ten; past the bound a window is a buffer of its own. Bounds what the pool keeps.
 */
export const batchWindowsMax = 32;

/**
 * Offsets committed for a partition outside its own stored consumer offsets (a consumer group's,
 * kept by the group coordinator): the smallest, or null when none is. Total retention's consumer
 * barrier keeps what they still need.
 */
export type ConsumerBarrierSource = (
  streamId: number,
  topicName: string,
  partitionId: number,
) => number | null;

/** A shard's part in tiered storage, when it is enabled. */
export interface ShardTiering {
  readonly tier: TierService;
  readonly cache: ChunkCache;
  /** How each hosted partition's `TierRemoteReader` reads its evicted segments through `cache`. */
  readonly remoteReads: TierRemoteReaderOptions;
}

export interface ShardRuntimeDeps {
  id: number;
  pump: Pump;
  logger: Logger;
  /**
   * One piece of work per turn of the loop, whoever does it: upload pieces, chunk fills, the walk
   * of a remote chunk, the encoding of a poll's answer and every disk caller's resumption take
   * their turn here. The gate is the process's, shared by its shards, since they share one loop.
   */
  pieceGate: PieceGate;
  /** Its wall time is what total retention by age compares message timestamps with. */
  clock: Clock;
  /** Null when tiered storage is disabled. */
  tiering: ShardTiering | null;
}

/**
 * A logical unit owning some partitions and their periodic duties, all driven from its pump's
 * tick: time-based rolls, interval fsyncs, total retention (one pass per partition in flight at
 * most), and with tiered storage its tier service, chunk cache, control log and housekeeping.
 * It counts the produce and poll requests it serves, housekeeping's idle signal.
 */
export class ShardRuntime implements RequestCounter {
  readonly id: number;
  readonly pump: Pump;
  readonly pieceGate: PieceGate;
  readonly tiering: ShardTiering | null;
  /**
   * The write buffers its partitions' logs borrow for one write each, so that a produce allocates
   * no buffer for its batch (a busy producer's dead batches would otherwise wait for the garbage
   * collector by the tens of megabytes).
   */
  readonly writeBuffers = new BufferPool({ bufferBytes: writeBufferBytes, buffersMax: writeBuffersMax });
  /** The read windows of its partitions' Kafka fetches, lent until each answer is written. */
  readonly batchWindows = new BufferPool({ bufferBytes: readWindowBytesMax, buffersMax: batchWindowsMax });
  readonly #partitions = new Map<Partition, HostedTopic>();
  /** Each hosted log by when its tick duty is next due; a log with nothing due is not held. */
  readonly #logDuties = new DueHeap<Partition>();
  /** Removes each hosted log's activity listener. */
  readonly #activityStops = new Map<Partition, () => void>();
  readonly #retentionLooks: DueLooks<Partition>;
  /** Each partition's total-retention pass in flight: the segments it deleted, or null when it failed. */
  readonly #retentionInFlight = new Map<Partition, Promise<number | null>>();
  /** Hosted partitions whose stop (a failed write) was logged; bounded by the hosted ones. */
  readonly #stoppedReported = new WeakSet<Partition>();
  readonly #logger: Logger;
  readonly #clock: Clock;
  #requestsServed = 0;
  /** The producer counts of the partitions released from this shard. */
  readonly #releasedProducerCounts: ProducerCounts = noProducerCounts();
  #controlLog: ControlLog | null = null;
  #housekeeping: Housekeeping | null = null;
  /** Consumer groups' committed offsets, for the barrier; set once the group coordinator runs. */
  consumerBarrier: ConsumerBarrierSource | null = null;

  constructor(deps: ShardRuntimeDeps) {
    this.id = deps.id;
    this.pump = deps.pump;
    this.pieceGate = deps.pieceGate;
    this.tiering = deps.tiering;
    this.#logger = deps.logger;
    this.#clock = deps.clock;
    this.#retentionLooks = new DueLooks({
      idleLookIntervalMs: retentionIdleLookIntervalMs,
      dueLooksPerTickMax: retentionChecksPerTickMax,
    });
    this.pump.onTick("log", (nowMs) => this.#onLogTick(nowMs));
    const tiering = deps.tiering;
    if (tiering === null) return;
    this.pump.onTick("tier", (nowMs) => tiering.tier.onTick(nowMs));
    this.pump.onTick("cache", (nowMs) => tiering.cache.onTick(nowMs));
  }

  /** The tier service, when tiered storage is enabled. */
  get tier(): TierService | null {
    return this.tiering?.tier ?? null;
  }

  /** Produce and poll requests served for this shard's partitions so far. */
  get requestsServed(): number {
    return this.#requestsServed;
  }

  /** A produce or poll request for one of this shard's partitions is being served. */
  countRequest(): void {
    this.#requestsServed++;
  }

  /**
   * Attaches the shard's control log (opened after its partitions, since its replay applies
   * committed floors to them) and the housekeeping that runs from the pump's tick from then on.
   */
  attachControlLog(controlLog: ControlLog, housekeeping: Housekeeping): void {
    assert(this.tiering !== null, "Cannot attach a control log: tiered storage is disabled on this shard");
    assert(this.#controlLog === null, "Cannot attach a control log: the shard has one");
    this.#controlLog = controlLog;
    this.#housekeeping = housekeeping;
    this.pump.onTick("housekeeping", (nowMs) => housekeeping.onTick(nowMs));
  }

  /** Serves an opened partition: its log's duties, write buffers, remote reads and tiering. */
  host(partition: Partition, topic: HostedTopic): void {
    assert(
      !this.#partitions.has(partition),
      `Cannot host partition ${labelOf(partition.address)}: it is hosted`,
    );
    this.#partitions.set(partition, topic);
    this.#retentionLooks.add(partition, this.#clock.nowMs());
    const due = () => {
      const nowMs = this.#clock.nowMs();
      this.#logDuties.bringForward(partition, nowMs);
      this.#retentionLooks.bringForward(partition, nowMs + retentionCheckIntervalMs);
    };
    this.#activityStops.set(partition, partition.log.onActivity("shard", due));
    due();
    partition.log.useWriteBuffers(this.writeBuffers);
    partition.log.useBatchWindows(this.batchWindows);
    if (this.tiering === null) return;
    const { tier, cache, remoteReads } = this.tiering;
    partition.log.attachRemoteReader(new TierRemoteReader(partition, cache, remoteReads), this.pieceGate);
    // A read replica uploads, evicts and deletes nothing: its follower alone changes its chain.
    if (topic.meta.options.readReplicaOf === null) {
      tier.addPartition(new HostedTieredPartition(partition, topic));
    }
  }

  /**
   * The idempotent producers of each hosted partition that has any, and the produces its partitions
   * answered as duplicates or refused, those released since included, so that the totals only grow.
   */
  producerGauges(): { producers: [string, number][]; counts: ProducerCounts } {
    const producers: [string, number][] = [];
    const counts = { ...this.#releasedProducerCounts };
    for (const partition of this.#partitions.keys()) {
      const states = partition.log.producers;
      if (states.size > 0) producers.push([labelOf(partition.address), states.size]);
      addProducerCounts(counts, states.counts);
    }
    return { producers, counts };
  }

  /** Stops serving a partition that is about to close. */
  release(partition: Partition): void {
    const readReplica = this.#partitions.get(partition)?.meta.options.readReplicaOf != null;
    if (this.#partitions.has(partition)) {
      addProducerCounts(this.#releasedProducerCounts, partition.log.producers.counts);
    }
    this.#partitions.delete(partition);
    this.#retentionLooks.remove(partition);
    this.#logDuties.remove(partition);
    this.#activityStops.get(partition)?.();
    this.#activityStops.delete(partition);
    if (!readReplica) this.tiering?.tier.removePartition(labelOf(partition.address));
  }

  /** Tells the tier service that a hosted partition was purged. */
  purged(partition: Partition): void {
    this.tiering?.tier.purged(labelOf(partition.address));
  }

  /** Stops the pump: no tick runs after this. */
  stopPump(): void {
    this.pump.stop();
  }

  /** Stops housekeeping, waiting for a run in progress. */
  async stopHousekeeping(): Promise<void> {
    await this.#housekeeping?.stop();
  }

  async closeControlLog(): Promise<void> {
    await this.#controlLog?.close();
  }

  async closeCache(): Promise<void> {
    await this.tiering?.cache.close();
  }

  /**
   * Waits for the total-retention passes in flight and resolves with what each deleted (null for a
   * pass that failed, which it logged); [] when none runs. A test thereby knows that a pass ran
   * before it looks at what the pass left.
   */
  retentionPasses(): Promise<(number | null)[]> {
    return Promise.all(this.#retentionInFlight.values());
  }

  /**
   * The logs whose duty is due, not every log: each says when it is next due, and a write brings
   * it forward. Total retention looks at a partition when its look is due (`#runRetention`).
   */
  #onLogTick(nowMs: number): void {
    for (const partition of this.#logDuties.takeDue(nowMs, logDutiesPerTickMax)) {
      this.#reportStopped(partition);
      // A listener may have brought it forward meanwhile: the earlier time stands.
      this.#logDuties.bringForward(partition, partition.log.onTick(nowMs));
    }
    const checks = this.#retentionLooks.take(nowMs);
    if (checks.length === 0) return;
    const wallMs = this.#clock.wallMs();
    for (const partition of checks) {
      const topic = this.#partitions.get(partition)!;
      this.#runRetention(partition, topic, wallMs);
      const nextWallMs = nextRetentionLookWallMs(
        partition,
        topic.meta.options,
        wallMs,
        retentionCheckIntervalMs,
      );
      // The limits are on the wall clock, the looks on the monotonic one: the wait carries over.
      if (nextWallMs !== null) this.#retentionLooks.bringForward(partition, nowMs + nextWallMs - wallMs);
    }
  }

  /**
   * Logs, once, the failure that stopped a partition's writes: loudly as a bug when it is one (its
   * stack and causes), else as the disk failure it is. The partition refuses writes from then on
   * (503 `partition_unavailable`, Kafka's KAFKA_STORAGE_ERROR); the rest of the shard serves.
   */
  #reportStopped(partition: Partition): void {
    const error = partition.log.failure;
    if (error === null || this.#stoppedReported.has(partition)) return;
    this.#stoppedReported.add(partition);
    const label = partition.log.label;
    const what = isBug(error)
      ? `bug: a write of partition ${label} threw; the partition stops`
      : "partition stopped: a write failed";
    this.#logger.error(what, { partition: label, error });
  }

  #runRetention(partition: Partition, topic: HostedTopic, wallMs: number): void {
    if (this.#retentionInFlight.has(partition)) return;
    // In a cluster the leader decides, and its replicas delete what it committed.
    const retention = this.tiering?.tier.retention;
    const key = labelOf(partition.address);
    if (retention !== undefined && !retention.decidesHere(key)) return;
    const groups = this.consumerBarrier?.(
      partition.address.streamId,
      topic.meta.name,
      partition.address.partitionId,
    );
    const stored = partition.offsets.minimum();
    const minimum = groups === null || groups === undefined
      ? stored
      : stored === null
      ? groups
      : Math.min(stored, groups);
    const pass = totalRetentionPass(partition, topic.meta.options, wallMs, minimum);
    if (pass === null) return;
    const running = pass
      .then((deleted) => {
        if (deleted > 0) {
          this.#logger.info("retention deleted segments", {
            partition: partition.log.label,
            segments: deleted,
          });
          retention?.deleted(key, this.#clock.nowMs());
        }
        return deleted;
      })
      .catch((error) => {
        rethrowBug(error, this.#logger, "a retention pass threw; the process stops", {
          partition: partition.log.label,
        });
        this.#logger.error("retention failed", { partition: partition.log.label, error });
        return null;
      })
      .finally(() => this.#retentionInFlight.delete(partition));
    this.#retentionInFlight.set(partition, running);
  }
}

/** The process's shards, each partition placed on one of them by a stable hash of its address. */
export class ShardSet implements PartitionHost {
  readonly shards: readonly ShardRuntime[];

  constructor(shards: readonly ShardRuntime[]) {
    assert(shards.length >= 1, "Cannot run a broker without shards");
    assert(shards.every((s, i) => s.id === i), "Cannot place partitions: shard ids must be 0 to n-1");
    this.shards = shards;
  }

  get pumps(): Pump[] {
    return this.shards.map((s) => s.pump);
  }

  shardOf(address: PartitionAddress): ShardRuntime {
    return this.shards[shardIndexOf(address, this.shards.length)]!;
  }

  host(partition: Partition, topic: HostedTopic): void {
    this.shardOf(partition.address).host(partition, topic);
  }

  release(partition: Partition): void {
    this.shardOf(partition.address).release(partition);
  }

  purged(partition: Partition): void {
    this.shardOf(partition.address).purged(partition);
  }

  startPumps(): void {
    for (const shard of this.shards) shard.pump.start();
  }

  /**
   * Stops every pump, then housekeeping, then closes the control logs and the caches, each step
   * on every shard before the next, and every step on every shard even when one fails (the
   * failures are thrown at the end); the partitions are the catalog's to close after this.
   */
  async close(): Promise<void> {
    for (const shard of this.shards) shard.stopPump();
    const failures = [
      ...await runEach(this.shards, (shard) => shard.stopHousekeeping()),
      ...await runEach(this.shards, (shard) => shard.closeControlLog()),
      ...await runEach(this.shards, (shard) => shard.closeCache()),
    ];
    throwFailures("close the shards", failures);
  }
}
