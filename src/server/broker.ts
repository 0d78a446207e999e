import { Housekeeping } from "../tier/housekeeping.ts";
import type { Cooperation } from "../runtime/cooperation.ts";
import type { PieceGate } from "../runtime/piece_gate.ts";
import { HousekeepingMetrics } from "../tier/housekeeping_metrics.ts";
import type { IncarnationTable, KnownPartition } from "../tier/object_class.ts";
import type { Config } from "../config/config.ts";
import type { MessageInput } from "../log/batch_codec.ts";
import type { LogConfig } from "../log/log_config.ts";
import {
  PartitionUnavailableError,
  RemoteReadUnavailableError,
  WriteQueueFullError,
} from "../log/log_errors.ts";
import { labelOf, Partition, type PartitionAddress, partitionDir } from "../log/partition.ts";
import type { LogStats } from "../log/segment_chain.ts";
import type { ReadResult } from "../log/segment_reads.ts";
import { retentionByLimits, retentionLimitsOf } from "../log/total_retention.ts";
import { BufferPool } from "../runtime/buffer_pool.ts";
import { pooledWindowBytes, pooledWindowsMax } from "../tier/tier_remote_reader.ts";
import { TooManyConsumersError } from "../log/consumer_offsets.ts";
import type { Clock } from "../runtime/clock.ts";
import type { Disk } from "../runtime/disk.ts";
import type { Logger } from "../runtime/logger.ts";
import type { Registry } from "../runtime/metrics.ts";
import { Pump } from "../runtime/pump.ts";
import { PumpMetrics } from "../runtime/pump_metrics.ts";
import type { Rng } from "../runtime/rng.ts";
import { Semaphore } from "../runtime/semaphore.ts";
import { ApiError, badRequest, conflict, notFound, unavailable } from "./api_errors.ts";
import { CacheFullError, ChunkCache, FetchTimeoutError } from "../tier/chunk_cache.ts";
import { TierRemoteReader } from "../tier/tier_remote_reader.ts";
import { RemoteCorruptError, RemoteDataLossError } from "../log/remote_reader.ts";
import { NotFoundError, ThrottledError, TransportError } from "../objectstore/object_store_errors.ts";
import { MetadataStore, type StreamMeta, type TopicMeta } from "./metadata_store.ts";
import { checkName } from "./names.ts";
import { Shard } from "./shard.ts";
import { fnv1a32 } from "./stable_hash.ts";
import {
  parseTopicOptions,
  patchTopicOptions,
  type TopicDefaults,
  type TopicOptions,
  topicOptionsJson,
} from "./topic_options.ts";
import type { RetryingObjectStore } from "../objectstore/retrying_object_store.ts";
import type { ControlLog } from "../tier/control_log.ts";
import { LocalControlLog } from "../tier/local_control_log.ts";
import { TierService } from "../tier/tier_service.ts";
import { TierMetrics } from "../tier/tier_metrics.ts";
import { CacheMetrics } from "../tier/cache_metrics.ts";
import { TokenBucket } from "../runtime/token_bucket.ts";

export interface PartitionStats extends LogStats {
  shard: number;
  tieredUpToOffset: number;
  deletedUpToOffset: number;
  localSizeBytes: number;
  remoteSizeBytes: number;
}

export interface BrokerDeps {
  config: Config;
  disk: Disk;
  clock: Clock;
  rng: Rng;
  logger: Logger;
  registry: Registry;
  /** The object store, when tiered storage is enabled: each shard then runs a tier service. */
  objectStore: RetryingObjectStore | null;
  /** The cooperative controls (benchmark switch; `cooperative` in production). */
  cooperation: Cooperation;
  /**
   * The process's piece gate: one event loop per process, so one piece of work per turn of it,
   * whichever shard does it. The disk's callers resume on the same gate (`GatedDisk`).
   */
  pieceGate: PieceGate;
}

/** A partition slot: open, or refused at boot with the reason. */
type PartitionSlot = { kind: "open"; partition: Partition } | { kind: "refused"; reason: string };

interface TopicRuntime {
  meta: TopicMeta;
  streamId: number;
  slots: PartitionSlot[];
  roundRobin: number;
}

export interface PollRequest {
  offset?: number;
  timestampUs?: number;
  count: number;
  maxBytes: number;
}

/** Bounds on admin operations waiting for the metadata lock. */
const adminWaitersMax = 1024;

/**
 * The storage engine's front: streams, topics and partitions by name, their placement on shards,
 * and the operations the HTTP API exposes. Admin changes (create, delete, purge) are serialized
 * by one lock; data operations go straight to the partition.
 */
export class Broker {
  readonly shards: readonly Shard[];
  /** One per shard, when tiered storage is enabled. */
  readonly tiers: (TierService | null)[] = [];
  readonly #controlLogs: ControlLog[] = [];
  /** One per shard, when tiered storage is enabled: reads of evicted segments go through it. */
  readonly #caches: (ChunkCache | null)[] = [];
  #tierMetrics: TierMetrics | null = null;
  #cacheMetrics: CacheMetrics | null = null;
  #housekeepingMetrics: HousekeepingMetrics | null = null;
  readonly #housekeeping: Housekeeping[] = [];
  readonly #deps: BrokerDeps;
  readonly #metadata: MetadataStore;
  readonly #topics = new Map<string, TopicRuntime>();
  readonly #adminLock = new Semaphore({ permits: 1, waitersMax: adminWaitersMax, name: "metadata lock" });

  private constructor(deps: BrokerDeps, metadata: MetadataStore, shards: Shard[]) {
    this.#deps = deps;
    this.#metadata = metadata;
    this.shards = shards;
  }

  static async open(deps: BrokerDeps): Promise<Broker> {
    const { config, disk, clock, logger } = deps;
    const dataPath = config.system.path;
    await disk.mkdirp(`${dataPath}/streams`);
    const metadata = await MetadataStore.open(disk, dataPath, deps.rng, config.system.clusterId);
    const pumpMetrics = new PumpMetrics(deps.registry);
    const shards: Shard[] = [];
    const broker = new Broker(deps, metadata, shards);
    for (let id = 0; id < config.system.shards; id++) {
      const shardLogger = logger.child({ shard: String(id) });
      const pump = new Pump({
        clock,
        metrics: pumpMetrics,
        logger: shardLogger,
        shard: String(id),
        tickIntervalMs: config.system.tickIntervalMs,
      });
      shards.push(
        new Shard(
          id,
          pump,
          shardLogger,
          (p, wallMs) => broker.#retentionPass(p, wallMs),
          () => clock.wallMs(),
          deps.pieceGate,
        ),
      );
      const tier = deps.objectStore === null
        ? null
        : broker.#newTierService(deps.objectStore, shardLogger, shards[id]!.pieceGate);
      broker.tiers.push(tier);
      if (tier !== null) pump.onTick("tier", (nowMs) => tier.onTick(nowMs));
    }
    const c = config.tieredStorage.cache;
    // The cache budget is the smaller of size and size_percent of the data disk, split among shards.
    const budgetBytes = deps.objectStore === null
      ? 0
      : Math.min(c.sizeBytes, Math.floor(((await disk.capacityBytes(dataPath)) * c.sizePercent) / 100));
    if (deps.objectStore !== null) {
      logger.info("chunk cache budget", { budget_bytes: budgetBytes, size_bytes: c.sizeBytes });
    }
    for (const [id, tier] of broker.tiers.entries()) {
      if (tier === null || deps.objectStore === null) {
        broker.#caches.push(null);
        continue;
      }
      const cache = await ChunkCache.open({
        disk,
        store: deps.objectStore,
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
        gate: shards[id]!.pieceGate,
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
        metrics: broker.#cacheMetrics ??= new CacheMetrics(deps.registry),
      });
      broker.#caches.push(cache);
      shards[id]!.pump.onTick("cache", (nowMs) => cache.onTick(nowMs));
    }
    await broker.#sweepOrphanDirectories();
    for (const stream of metadata.doc.streams) {
      for (const topic of stream.topics) await broker.#openTopic(stream.id, topic);
    }
    // Opened after the partitions: the replay applies committed floors to them.
    for (const [id, tier] of broker.tiers.entries()) {
      if (tier === null) continue;
      const log = await LocalControlLog.open(disk, `${dataPath}/control/shard-${id}.log`);
      broker.#controlLogs.push(log);
      await tier.attachControlLog(log);
      const housekeeping = broker.#newHousekeeping(id, tier, deps.objectStore!);
      broker.#housekeeping.push(housekeeping);
      shards[id]!.pump.onTick("housekeeping", (nowMs) => housekeeping.onTick(nowMs));
    }
    for (const shard of shards) shard.pump.start();
    logger.info("broker opened", {
      cluster_id: metadata.doc.clusterId,
      streams: metadata.doc.streams.length,
      shards: shards.length,
    });
    return broker;
  }

  get clusterId(): string {
    return this.#metadata.doc.clusterId;
  }

  // ---- streams -------------------------------------------------------------------------------

  listStreams(): Record<string, unknown>[] {
    return this.#metadata.doc.streams.map((s) => this.#streamView(s));
  }

  getStream(name: string): Record<string, unknown> {
    return this.#streamView(this.#stream(name));
  }

  async createStream(name: unknown): Promise<Record<string, unknown>> {
    const streamName = checkName("stream", name);
    using _lock = await this.#adminLock.acquire();
    if (this.#metadata.doc.streams.some((s) => s.name === streamName)) {
      throw conflict("already_exists", `Cannot create stream ${streamName}: it already exists`);
    }
    const id = this.#metadata.doc.nextStreamId;
    await this.#metadata.commit((doc) => {
      doc.streams.push({
        id,
        name: streamName,
        createdAtMs: this.#deps.clock.wallMs(),
        nextTopicId: 1,
        topics: [],
      });
      doc.nextStreamId = id + 1;
    });
    return this.getStream(streamName);
  }

  async deleteStream(name: string): Promise<void> {
    using _lock = await this.#adminLock.acquire();
    const stream = this.#stream(name);
    await this.#metadata.commit((doc) => {
      doc.streams = doc.streams.filter((s) => s.id !== stream.id);
    });
    for (const topic of stream.topics) await this.#closeTopic(stream.name, topic.name);
    await this.#deps.disk.removeTree(`${this.#deps.config.system.path}/streams/${stream.id}`);
  }

  // ---- topics --------------------------------------------------------------------------------

  async createTopic(streamName: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const topicName = checkName("topic", body["name"]);
    const options = parseTopicOptions(body, this.#topicDefaults());
    using _lock = await this.#adminLock.acquire();
    const stream = this.#stream(streamName);
    if (stream.topics.some((t) => t.name === topicName)) {
      throw conflict("already_exists", `Cannot create topic ${streamName}/${topicName}: it already exists`);
    }
    const meta: TopicMeta = {
      id: stream.nextTopicId,
      name: topicName,
      createdAtMs: this.#deps.clock.wallMs(),
      options,
    };
    const topicDir = `${this.#deps.config.system.path}/streams/${stream.id}/topics/${meta.id}`;
    const slots: PartitionSlot[] = [];
    try {
      for (let p = 0; p < options.partitions; p++) {
        const address = { streamId: stream.id, topicId: meta.id, partitionId: p };
        const partition = await Partition.create(
          this.#deps.disk,
          this.#deps.clock,
          this.#deps.rng,
          this.#deps.config.system.path,
          address,
          this.#logConfig(options),
        );
        slots.push({ kind: "open", partition });
      }
      await this.#metadata.commit((doc) => {
        const s = doc.streams.find((x) => x.id === stream.id)!;
        s.topics.push(meta);
        s.nextTopicId = meta.id + 1;
      });
    } catch (error) {
      for (const slot of slots) if (slot.kind === "open") await slot.partition.close();
      await this.#deps.disk.removeTree(topicDir);
      throw error;
    }
    this.#register(stream.id, streamName, meta, slots);
    return this.getTopic(streamName, topicName);
  }

  /** Changes a topic's options; tiering cannot be turned off while remote segments exist. */
  async patchTopic(
    streamName: string,
    topicName: string,
    body: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    using _lock = await this.#adminLock.acquire();
    const stream = this.#stream(streamName);
    const topic = this.#topic(streamName, topicName);
    const options = patchTopicOptions(topic.meta.options, body);
    const remote = topic.slots.some((s) =>
      s.kind === "open" && s.partition.log.segments.some((x) => x.location !== "local")
    );
    if (topic.meta.options.tiered && !options.tiered && remote) {
      throw conflict(
        "remote_segments_exist",
        `Cannot turn tiering off for ${streamName}/${topicName}: it has remote segments`,
      );
    }
    await this.#metadata.commit((doc) => {
      const t = doc.streams.find((x) => x.id === stream.id)!.topics.find((x) => x.id === topic.meta.id)!;
      t.options = options;
    });
    topic.meta = { ...topic.meta, options };
    for (const slot of topic.slots) {
      if (slot.kind !== "open") continue;
      slot.partition.log.updateConfig(this.#logConfig(options));
    }
    return this.getTopic(streamName, topicName);
  }

  /** Resolves true once every message below `offset` is durable in the object store. */
  awaitTiered(
    streamName: string,
    topicName: string,
    partitionId: number,
    offset: number,
    timeoutMs: number,
  ): Promise<boolean> {
    const topic = this.#topic(streamName, topicName);
    const partition = this.#open(topic, partitionId, streamName);
    const tier = this.tiers[this.#shardOf(partition.address).id] ?? null;
    if (tier === null) {
      throw badRequest("tiering_disabled", "Cannot await the tiered floor: tiered storage is not enabled");
    }
    return tier.awaitFloor(labelOf(partition.address), offset, timeoutMs);
  }

  getTopic(streamName: string, topicName: string): Record<string, unknown> {
    const topic = this.#topic(streamName, topicName);
    return {
      id: topic.meta.id,
      name: topic.meta.name,
      created_at: topic.meta.createdAtMs,
      ...topicOptionsJson(topic.meta.options),
      size_bytes: topic.slots.reduce(
        (sum, s) => sum + (s.kind === "open" ? s.partition.log.stats().sizeBytes : 0),
        0,
      ),
    };
  }

  async deleteTopic(streamName: string, topicName: string): Promise<void> {
    using _lock = await this.#adminLock.acquire();
    const stream = this.#stream(streamName);
    const topic = this.#topic(streamName, topicName);
    await this.#metadata.commit((doc) => {
      const s = doc.streams.find((x) => x.id === stream.id)!;
      s.topics = s.topics.filter((t) => t.id !== topic.meta.id);
    });
    await this.#closeTopic(streamName, topicName);
    await this.#deps.disk.removeTree(
      `${this.#deps.config.system.path}/streams/${stream.id}/topics/${topic.meta.id}`,
    );
  }

  async purgeTopic(streamName: string, topicName: string): Promise<void> {
    using _lock = await this.#adminLock.acquire();
    const topic = this.#topic(streamName, topicName);
    for (const slot of topic.slots) {
      if (slot.kind !== "open") continue;
      await slot.partition.purge();
      this.tiers[this.#shardOf(slot.partition.address).id]?.purged(labelOf(slot.partition.address));
    }
  }

  // ---- data ----------------------------------------------------------------------------------

  async produce(
    streamName: string,
    topicName: string,
    partitionId: number | undefined,
    messages: MessageInput[],
  ): Promise<{ partition: number; base_offset: number; count: number }> {
    const topic = this.#topic(streamName, topicName);
    const id = partitionId ?? this.#choosePartition(topic, messages[0]!.key);
    const partition = this.#open(topic, id, streamName);
    this.#shardOf(partition.address).requests++;
    const result = await dataCall(() => partition.log.append(messages));
    return { partition: id, base_offset: result.baseOffset, count: result.count };
  }

  async poll(
    streamName: string,
    topicName: string,
    partitionId: number,
    request: PollRequest,
  ): Promise<ReadResult> {
    const partition = this.#open(this.#topic(streamName, topicName), partitionId, streamName);
    const shard = this.#shardOf(partition.address);
    shard.requests++;
    const result = await dataCall(() =>
      request.timestampUs !== undefined
        ? partition.log.readFromTimestamp(request.timestampUs, request.count, request.maxBytes)
        : partition.log.read(request.offset ?? 0, request.count, request.maxBytes)
    );
    // The answer's encoding (up to `max_bytes` of messages) is a piece of CPU work: it runs on the
    // gate's turn, which the caller's synchronous encode continues, so 32 polls finishing together
    // cannot put 32 encodings into one turn of the loop ahead of the tick.
    if (result.messages.length > 0) await shard.pieceGate.turn();
    return result;
  }

  partitionStats(streamName: string, topicName: string, partitionId: number): PartitionStats {
    const topic = this.#topic(streamName, topicName);
    const partition = this.#open(topic, partitionId, streamName);
    const stats = partition.log.stats();
    const remote = stats.segments.filter((s) => s.location === "remote").reduce((n, s) => n + s.sizeBytes, 0);
    return {
      ...stats,
      shard: this.#shardOf(partition.address).id,
      tieredUpToOffset: partition.superblock.tieredUpToOffset,
      deletedUpToOffset: partition.superblock.deletedUpToOffset,
      localSizeBytes: stats.sizeBytes - remote,
      remoteSizeBytes: remote,
    };
  }

  async storeConsumerOffset(
    stream: string,
    topic: string,
    partitionId: number,
    consumer: string,
    offset: number,
  ) {
    const partition = this.#open(this.#topic(stream, topic), partitionId, stream);
    try {
      await partition.offsets.set(consumer, offset);
    } catch (error) {
      if (error instanceof TooManyConsumersError) throw conflict("limit_exceeded", error.message);
      throw error;
    }
  }

  consumerOffset(stream: string, topic: string, partitionId: number, consumer: string): number {
    const partition = this.#open(this.#topic(stream, topic), partitionId, stream);
    const offset = partition.offsets.get(consumer);
    if (offset === null) throw notFound(`Cannot get offset of consumer ${consumer}: none is stored`);
    return offset;
  }

  /** Stops the pumps and closes every partition, syncing its log. */
  async close(): Promise<void> {
    for (const shard of this.shards) shard.pump.stop();
    for (const h of this.#housekeeping) await h.stop();
    for (const log of this.#controlLogs) await log.close();
    for (const cache of this.#caches) await cache?.close();
    for (const topic of this.#topics.values()) {
      for (const slot of topic.slots) if (slot.kind === "open") await slot.partition.close();
    }
  }

  // ---- internals -----------------------------------------------------------------------------

  #topicDefaults(): TopicDefaults {
    const t = this.#deps.config.tieredStorage;
    return {
      tiered: t.enabled && t.defaultTopicTiered,
      localRetentionAgeMs: t.defaultLocalRetentionAgeMs,
      localRetentionSizeBytes: t.defaultLocalRetentionSizeBytes,
    };
  }

  #newHousekeeping(shardId: number, tier: TierService, store: RetryingObjectStore): Housekeeping {
    const t = this.#deps.config.tieredStorage;
    return new Housekeeping({
      clock: this.#deps.clock,
      logger: this.#deps.logger.child({ shard: String(shardId), component: "housekeeping" }),
      store,
      config: {
        ...t.housekeeping,
        prefix: t.s3.prefix,
        clusterId: this.#metadata.doc.clusterId,
        segmentUploadTimeoutMs: t.segmentUploadTimeoutMs,
      },
      sweepsOrphans: shardId === 0,
      partitions: () => tier.partitions(),
      requestCount: () => this.shards[shardId]!.requests,
      liveTable: () => this.#incarnationTable(),
      upload: tier.uploadDeps,
      metrics: this.#housekeepingMetrics ??= new HousekeepingMetrics(this.#deps.registry),
    });
  }

  /** Every partition the metadata names, as the orphan sweep judges objects against it. */
  #incarnationTable(): IncarnationTable {
    const table = new Map<string, KnownPartition>();
    for (const topic of this.#topics.values()) {
      topic.slots.forEach((slot, partitionId) => {
        const key = labelOf({ streamId: topic.streamId, topicId: topic.meta.id, partitionId });
        if (slot.kind !== "open") {
          table.set(key, "unreadable");
          return;
        }
        const sb = slot.partition.superblock;
        table.set(key, {
          createdRevision: sb.createdRevision,
          purgeGeneration: sb.purgeGeneration,
          deletedUpToOffset: sb.deletedUpToOffset,
        });
      });
    }
    return table;
  }

  #newTierService(store: RetryingObjectStore, logger: Logger, pieceGate: PieceGate): TierService {
    const { clock, rng, disk, config } = this.#deps;
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
      metrics: this.#tierMetrics ??= new TierMetrics(this.#deps.registry),
      cooperation: this.#deps.cooperation,
      pieceGate,
      config: {
        prefix: t.s3.prefix,
        clusterId: this.#metadata.doc.clusterId,
        uploadConcurrency: t.uploadConcurrency,
        uploadPieceBytes: t.uploadPieceBytes,
        uploadLoopBackoffMaxMs: t.uploadLoopBackoffMaxMs,
        segmentUploadTimeoutMs: t.segmentUploadTimeoutMs,
        retry: t.retry,
      },
    });
  }

  #stream(name: string): StreamMeta {
    const stream = this.#metadata.doc.streams.find((s) => s.name === name);
    if (stream === undefined) throw notFound(`Cannot find stream ${name}`);
    return stream;
  }

  #topic(streamName: string, topicName: string): TopicRuntime {
    const topic = this.#topics.get(topicKey(streamName, topicName));
    if (topic === undefined) {
      this.#stream(streamName);
      throw notFound(`Cannot find topic ${streamName}/${topicName}`);
    }
    return topic;
  }

  #open(topic: TopicRuntime, partitionId: number, streamName: string): Partition {
    const slot = topic.slots[partitionId];
    if (slot === undefined) {
      throw notFound(
        `Cannot find partition ${partitionId} of ${streamName}/${topic.meta.name}: it has ${topic.slots.length}`,
      );
    }
    if (slot.kind === "refused") throw unavailable("partition_unavailable", slot.reason, 30);
    return slot.partition;
  }

  #choosePartition(topic: TopicRuntime, key: string | null): number {
    if (key !== null) return fnv1a32(key) % topic.slots.length;
    topic.roundRobin = (topic.roundRobin + 1) % topic.slots.length;
    return topic.roundRobin;
  }

  #shardOf(address: PartitionAddress): Shard {
    const hash = fnv1a32(`${address.streamId}:${address.topicId}:${address.partitionId}`);
    return this.shards[hash % this.shards.length]!;
  }

  #logConfig(options: TopicOptions): LogConfig {
    const system = this.#deps.config.system;
    return {
      segmentSizeBytes: options.segmentSizeBytes,
      segmentMaxAgeMs: options.segmentMaxAgeMs,
      indexIntervalBytes: system.indexIntervalBytes,
      fsync: system.fsync,
      fsyncIntervalMs: system.fsyncIntervalMs,
      writeQueueMax: system.writeQueueMax,
    };
  }

  async #openTopic(streamId: number, meta: TopicMeta): Promise<void> {
    const stream = this.#metadata.doc.streams.find((s) => s.id === streamId)!;
    const slots: PartitionSlot[] = [];
    for (let p = 0; p < meta.options.partitions; p++) {
      const address = { streamId, topicId: meta.id, partitionId: p };
      try {
        const partition = await Partition.open(
          this.#deps.disk,
          this.#deps.clock,
          this.#deps.config.system.path,
          address,
          this.#logConfig(meta.options),
          this.#deps.logger,
        );
        slots.push({ kind: "open", partition });
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        this.#deps.logger.error("partition refused", {
          stream: stream.name,
          topic: meta.name,
          partition: p,
          dir: partitionDir(this.#deps.config.system.path, address),
          reason,
        });
        slots.push({ kind: "refused", reason });
      }
    }
    this.#register(streamId, stream.name, meta, slots);
  }

  #register(streamId: number, streamName: string, meta: TopicMeta, slots: PartitionSlot[]): void {
    const runtime: TopicRuntime = { meta, streamId, slots, roundRobin: -1 };
    for (const slot of slots) {
      if (slot.kind !== "open") continue;
      const shard = this.#shardOf(slot.partition.address);
      shard.partitions.add(slot.partition);
      slot.partition.log.useWriteBuffers(shard.writeBuffers);
      const cache = this.#caches[shard.id] ?? null;
      if (cache !== null) {
        slot.partition.log.attachRemoteReader(
          new TierRemoteReader(slot.partition, cache, {
            prefix: this.#deps.config.tieredStorage.s3.prefix,
            clusterId: this.#metadata.doc.clusterId,
            chunkBytes: this.#deps.config.tieredStorage.cache.chunkBytes,
            readaheadChunksMax: this.#deps.config.tieredStorage.cache.readaheadChunksMax,
            ...(this.#cacheMetrics !== null ? { metrics: this.#cacheMetrics } : {}),
          }),
          shard.pieceGate,
        );
      }
      // The tier service reads the topic's options at each use: a PATCH applies at once.
      this.tiers[shard.id]?.addPartition({
        key: labelOf(slot.partition.address),
        partition: slot.partition,
        tiered: () => runtime.meta.options.tiered,
        envelope: () => ({
          ageMs: runtime.meta.options.localRetentionAgeMs,
          sizeBytes: runtime.meta.options.localRetentionSizeBytes,
        }),
      });
    }
    this.#topics.set(topicKey(streamName, meta.name), runtime);
  }

  async #closeTopic(streamName: string, topicName: string): Promise<void> {
    const topic = this.#topics.get(topicKey(streamName, topicName));
    if (topic === undefined) return;
    this.#topics.delete(topicKey(streamName, topicName));
    for (const slot of topic.slots) {
      if (slot.kind !== "open") continue;
      this.#shardOf(slot.partition.address).partitions.delete(slot.partition);
      this.tiers[this.#shardOf(slot.partition.address).id]?.removePartition(labelOf(slot.partition.address));
      await slot.partition.close();
    }
  }

  /** Removes stream and topic directories that the metadata no longer names (an interrupted delete). */
  async #sweepOrphanDirectories(): Promise<void> {
    const { disk, config, logger } = this.#deps;
    const root = `${config.system.path}/streams`;
    const streams = new Map(this.#metadata.doc.streams.map((s) => [String(s.id), s]));
    for (const streamDir of await disk.list(root)) {
      const stream = streams.get(streamDir);
      if (stream === undefined) {
        logger.warn("removing orphan stream directory", { dir: `${root}/${streamDir}` });
        await disk.removeTree(`${root}/${streamDir}`);
        continue;
      }
      const topicsRoot = `${root}/${streamDir}/topics`;
      if ((await disk.stat(topicsRoot)) === null) continue;
      const topicIds = new Set(stream.topics.map((t) => String(t.id)));
      for (const topicDir of await disk.list(topicsRoot)) {
        if (topicIds.has(topicDir)) continue;
        logger.warn("removing orphan topic directory", { dir: `${topicsRoot}/${topicDir}` });
        await disk.removeTree(`${topicsRoot}/${topicDir}`);
      }
    }
  }

  /** Total retention of one partition: by age of the newest message in a segment, and by size. */
  #retentionPass(partition: Partition, wallMs: number): Promise<number> | null {
    const topic = [...this.#topics.values()].find((t) =>
      t.streamId === partition.address.streamId && t.meta.id === partition.address.topicId
    );
    if (topic === undefined) return null;
    // The consumer barrier (RFC invariant 8): on a tiered topic, a segment that a stored consumer
    // offset (the next offset that consumer reads) points into or before is kept.
    const limits = retentionLimitsOf(topic.meta.options, partition.offsets.minimum());
    if (limits === null) return null;
    return partition.enforceRetention(retentionByLimits(limits, wallMs));
  }

  #streamView(s: StreamMeta): Record<string, unknown> {
    return {
      id: s.id,
      name: s.name,
      created_at: s.createdAtMs,
      topics: s.topics.map((t) => ({ id: t.id, name: t.name, partitions: t.options.partitions })),
    };
  }
}

function topicKey(stream: string, topic: string): string {
  return `${stream}\u0000${topic}`;
}

/** Maps the log's typed failures to API errors. */
async function dataCall<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof WriteQueueFullError) throw unavailable("overloaded", error.message);
    if (error instanceof PartitionUnavailableError) {
      throw unavailable("partition_unavailable", error.message, 30);
    }
    // Until remote reads land, an evicted range answers 503, never wrong or missing data.
    if (error instanceof RemoteReadUnavailableError) {
      throw unavailable("remote_read_unavailable", error.message, 30);
    }
    // Remote reads: a full cache or a slow store is transient (the SDK retries, the fetch goes on);
    // missing or corrupt remote data is a fault of its own, never an empty or wrong answer.
    if (
      error instanceof CacheFullError || error instanceof FetchTimeoutError ||
      error instanceof TransportError ||
      error instanceof ThrottledError
    ) {
      throw unavailable("transient", error.message, 1);
    }
    if (error instanceof NotFoundError || error instanceof RemoteDataLossError) {
      throw new ApiError(502, "remote_data_missing", error.message);
    }
    if (error instanceof RemoteCorruptError) throw new ApiError(502, "remote_data_corrupt", error.message);
    throw error;
  }
}

export { badRequest, labelOf };
