import { labelOf, type Partition } from "../../log/partition/partition.ts";
import { assert, rethrowBug } from "../../runtime/assert.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import { QueueFullError } from "../../runtime/wait_errors.ts";
import type { Logger } from "../../runtime/logger.ts";
import { type Permit, Semaphore } from "../../runtime/cooperation/semaphore.ts";
import { yieldToReactor } from "../../runtime/cooperation/piece_gate.ts";
import { concurrently } from "../../runtime/cooperation/concurrently.ts";
import type { IncarnationTable, KnownPartition } from "../../tier/bucket/object_class.ts";
import { AlreadyExistsError, ResourceNotFoundError, UnavailableError } from "../broker_errors.ts";
import {
  addStream,
  addTopic,
  changeTopicOptions,
  type Metadata,
  referencedIncarnations,
  removeStream,
  removeTopic,
  type StreamMeta,
  type TopicMeta,
  type TopicRestore,
} from "../metadata/metadata.ts";
import type { MetadataStore } from "../metadata/metadata_store.ts";
import { checkName, checkTopicName } from "./names.ts";
import type { PartitionOpener, PartitionSlot } from "./partition_opener.ts";
import { streamIdsOnDisk, sweepOrphanDirectories } from "./orphan_directories.ts";
import { planFollow } from "../metadata/metadata_follow.ts";
import { runEach, throwFailures } from "../shards/shard_runtime.ts";
import type { HostedTopic } from "./hosted_topic.ts";
import { partitionsPerTopicMax, type TopicDefaults, type TopicOptions } from "./topic_options.ts";

/** Where the catalog's open partitions are served: the shards, which run their duties. */
export interface PartitionHost {
  /** Starts serving an opened partition. */
  host(partition: Partition, topic: HostedTopic): void;
  /** Stops serving a partition that is about to close. */
  release(partition: Partition): void;
  /** Learns that a served partition was purged. */
  purged(partition: Partition): void;
}

/** A topic as the catalog serves it: its stored metadata and its partition slots, by partition id. */
export interface CatalogTopic extends HostedTopic {
  readonly streamId: number;
  readonly streamName: string;
  readonly slots: readonly PartitionSlot[];
}

/** A topic's metadata with the bytes its open partitions hold. */
export interface TopicDescription {
  meta: TopicMeta;
  sizeBytes: number;
}

export interface CatalogDeps {
  /** Loaded: the catalog opens the topics its document names. */
  store: MetadataStore;
  disk: Disk;
  clock: Clock;
  logger: Logger;
  partitions: PartitionOpener;
  host: PartitionHost;
  /** What a create request's options default to. */
  topicDefaults: TopicDefaults;
  /** Refuses (throws) a new topic's options this server cannot serve, before anything is created. */
  admitTopic?: (options: TopicOptions) => void;
  /** The metadata is shared (a cluster's): a topic created while this server was down is created here at boot. */
  sharedMetadata?: boolean;
}

/** Bound on admin operations waiting for the metadata lock; one more is refused as overloaded. */
export const adminWaitersMax = 1024;

interface TopicEntry extends CatalogTopic {
  meta: TopicMeta;
}

/**
 * The streams, topics and partitions by name, with their ids and options, kept in the metadata
 * store. Admin changes (create, delete, patch, purge) are serialized by one lock and commit to the
 * store before they take effect (a delete commits first and removes the directories after); ids
 * come from the document each commit applies to. A partition that cannot be opened at boot keeps
 * a refused slot with its reason and error.
 */
export class Catalog {
  /** What a create request's options default to on this server. */
  readonly topicDefaults: TopicDefaults;
  readonly #deps: CatalogDeps;
  readonly #store: MetadataStore;
  readonly #topics = new Map<string, TopicEntry>();
  readonly #adminLock = new Semaphore({ permits: 1, waitersMax: adminWaitersMax, name: "metadata lock" });
  /** The remote changes being followed, one after the other. */
  #following: Promise<void> = Promise.resolve();

  private constructor(deps: CatalogDeps) {
    this.#deps = deps;
    this.#store = deps.store;
    this.topicDefaults = deps.topicDefaults;
  }

  /**
   * Removes the directories the metadata no longer names, then opens every topic it names. With
   * shared metadata it then catches up with the commits its store took meanwhile (no one listened).
   */
  static async open(deps: CatalogDeps): Promise<Catalog> {
    const catalog = new Catalog(deps);
    const { disk, partitions, store, logger } = deps;
    const missing = deps.sharedMetadata ? "create missing" : "refuse";
    await sweepOrphanDirectories(disk, partitions.streamsDir, store.doc, logger);
    for (const stream of store.doc.streams) {
      for (const topic of stream.topics) await catalog.#openTopic(stream, topic, missing);
    }
    store.onRemoteChange(() => catalog.#followRemote());
    if (deps.sharedMetadata) catalog.#followRemote();
    return catalog;
  }

  get clusterId(): string {
    return this.#store.doc.clusterId;
  }

  // ---- lookups ---------------------------------------------------------------------------------

  streams(): readonly StreamMeta[] {
    return this.#store.doc.streams;
  }

  stream(name: string): StreamMeta {
    const stream = this.#store.doc.streams.find((s) => s.name === name);
    if (stream === undefined) throw new ResourceNotFoundError(`Cannot find stream ${name}`);
    return stream;
  }

  topic(streamName: string, topicName: string): CatalogTopic {
    return this.#entry(streamName, topicName);
  }

  /** The topic, or null when the stream or the topic does not exist: one map lookup, no throw. */
  findTopic(streamName: string, topicName: string): CatalogTopic | null {
    return this.#topics.get(topicKey(streamName, topicName)) ?? null;
  }

  describeTopic(streamName: string, topicName: string): TopicDescription {
    const topic = this.#entry(streamName, topicName);
    const sizeBytes = topic.slots.reduce(
      (sum, s) => sum + (s.kind === "open" ? s.partition.log.stats().sizeBytes : 0),
      0,
    );
    return { meta: topic.meta, sizeBytes };
  }

  /** The topic's open partition `partitionId`; a refused one is unavailable with its reason. */
  openPartition(topic: CatalogTopic, partitionId: number): Partition {
    const slot = topic.slots[partitionId];
    if (slot === undefined) {
      throw new ResourceNotFoundError(
        `Cannot find partition ${partitionId} of ${topic.streamName}/${topic.meta.name}: it has ${topic.slots.length}`,
      );
    }
    if (slot.kind === "refused") {
      throw new UnavailableError("partition_unavailable", slot.reason, { cause: slot.error });
    }
    return slot.partition;
  }

  /** Every partition the metadata names, as the orphan sweep judges objects against it. */
  incarnationTable(): IncarnationTable {
    return incarnationTableOf(this.#store.doc, this.#topics.values());
  }

  /** True in a cluster, whose metadata every node shares. */
  get sharesMetadata(): boolean {
    return this.#deps.sharedMetadata === true;
  }

  // ---- streams ---------------------------------------------------------------------------------

  async createStream(name: string): Promise<StreamMeta> {
    const streamName = checkName("stream", name);
    using _lock = await this.#lockAdmin();
    const createdAtMs = this.#deps.clock.wallMs();
    return await this.#store.commit((doc) => addStream(doc, streamName, createdAtMs));
  }

  async deleteStream(name: string): Promise<void> {
    using _lock = await this.#lockAdmin();
    const stream = this.stream(name);
    await this.#store.commit((doc) => removeStream(doc, stream.id));
    for (const topic of stream.topics) await this.#closeTopic(stream.name, topic.name);
    await this.#deps.disk.removeTree(this.#deps.partitions.streamDir(stream.id));
  }

  // ---- topics ----------------------------------------------------------------------------------

  /**
   * Creates the topic's partitions under the stream's next topic id, then commits the topic, which
   * is refused if the id was taken meanwhile; on failure nothing of it is left. With `restore` (a
   * restore from the bucket, docs/DESIGN.md, "Restore"), a partition with a seed starts from it and
   * the metadata records the source, which GC then keeps.
   */
  async createTopic(
    streamName: string,
    topicName: string,
    options: TopicOptions,
    restore: TopicRestore | null = null,
  ): Promise<TopicDescription> {
    assert(restore === null || restore.seeds.length === options.partitions, "a restore seeds each partition");
    checkTopicName(topicName);
    assert(
      Number.isInteger(options.partitions) && options.partitions >= 1 &&
        options.partitions <= partitionsPerTopicMax,
      `Cannot create topic ${topicName}: ${options.partitions} partitions`,
    );
    this.#deps.admitTopic?.(options);
    using _lock = await this.#lockAdmin();
    const stream = this.stream(streamName);
    if (stream.topics.some((t) => t.name === topicName)) {
      throw new AlreadyExistsError(`Cannot create topic ${streamName}/${topicName}: it already exists`);
    }
    const meta: TopicMeta = {
      id: stream.nextTopicId,
      name: topicName,
      createdAtMs: this.#deps.clock.wallMs(),
      options,
      ...(restore === null ? {} : { restoredFrom: restore.from }),
    };
    const slots: PartitionSlot[] = [];
    try {
      await concurrently(options.partitions, partitionOpensInFlightMax, async (p) => {
        const address = { streamId: stream.id, topicId: meta.id, partitionId: p };
        const partition = await this.#deps.partitions.create(address, meta, restore?.seeds[p] ?? null);
        slots[p] = { kind: "open", partition };
      });
      await this.#store.commit((doc) => addTopic(doc, stream.id, streamName, meta));
    } catch (error) {
      for (const slot of slots) if (slot?.kind === "open") await slot.partition.close();
      await this.#deps.disk.removeTree(this.#deps.partitions.topicDir(stream.id, meta.id));
      throw error;
    }
    await this.#register({ streamId: stream.id, streamName, meta, slots });
    return this.describeTopic(streamName, topicName);
  }

  /**
   * Changes a topic's options to what `change` makes of the current ones, under the lock; tiering
   * cannot be turned off while remote segments exist. `change` runs inside the commit, on the
   * stored options, and may run more than once (`MetadataStore.commit`).
   */
  async patchTopic(
    streamName: string,
    topicName: string,
    change: (current: TopicOptions) => TopicOptions,
  ): Promise<TopicDescription> {
    using _lock = await this.#lockAdmin();
    const stream = this.stream(streamName);
    const topic = this.#entry(streamName, topicName);
    const hasRemoteSegments = topic.slots.some((s) =>
      s.kind === "open" && s.partition.log.segments.some((x) => x.location !== "local")
    );
    const options = await this.#store.commit((doc) =>
      changeTopicOptions(doc, {
        streamId: stream.id,
        topicId: topic.meta.id,
        label: `${streamName}/${topicName}`,
        change,
        hasRemoteSegments,
      })
    );
    this.#applyOptions(topic, options);
    return this.describeTopic(streamName, topicName);
  }

  async deleteTopic(streamName: string, topicName: string): Promise<void> {
    using _lock = await this.#lockAdmin();
    const stream = this.stream(streamName);
    const topic = this.#entry(streamName, topicName);
    await this.#store.commit((doc) => removeTopic(doc, stream.id, topic.meta.id));
    await this.#closeTopic(streamName, topicName);
    await this.#deps.disk.removeTree(this.#deps.partitions.topicDir(stream.id, topic.meta.id));
  }

  /** Deletes every message of the topic's open partitions; the topic and its offsets stay. */
  async purgeTopic(streamName: string, topicName: string): Promise<void> {
    using _lock = await this.#lockAdmin();
    const topic = this.#entry(streamName, topicName);
    for (const slot of topic.slots) {
      if (slot.kind !== "open") continue;
      await slot.partition.purge();
      this.#deps.host.purged(slot.partition);
    }
  }

  /**
   * Closes every open partition, syncing its log, even when one fails to close (its failure is
   * thrown after); the shards must be stopped first.
   */
  async close(): Promise<void> {
    const open = [...this.#topics.values()].flatMap((topic) =>
      topic.slots.flatMap((slot) => slot.kind === "open" ? [slot.partition] : [])
    );
    throwFailures("close the partitions", await runEach(open, (partition) => partition.close()));
  }

  // ---- internals -------------------------------------------------------------------------------

  /**
   * Brings the open topics in line with another server's commit (`planFollow`), under the admin
   * lock, so it never interleaves with a local change; the changes heard queue one behind the other.
   */
  #followRemote(): void {
    this.#following = this.#following.then(() => this.#syncWithStore()).catch((error) => {
      rethrowBug(error, this.#deps.logger, "following the cluster's metadata threw; the process stops");
      this.#deps.logger.error("Cannot follow the cluster's metadata", { error });
    });
  }

  async #syncWithStore(): Promise<void> {
    using _lock = await this.#adminLock.acquire();
    const onDisk = await streamIdsOnDisk(this.#deps.disk, this.#deps.partitions.streamsDir);
    const plan = planFollow(this.#store.doc, [...this.#topics.values()], onDisk);
    // Removals first: a topic created again under its old name must not find the old one open.
    for (const topic of plan.remove) {
      await this.#closeTopic(topic.streamName, topic.meta.name);
      await this.#deps.disk.removeTree(this.#deps.partitions.topicDir(topic.streamId, topic.meta.id));
    }
    for (const { stream, meta } of plan.open) await this.#openTopic(stream, meta, "create missing");
    for (const { topic, meta } of plan.changeOptions) this.#applyOptions(topic, meta.options);
    for (const id of plan.removeStreamIds) {
      await this.#deps.disk.removeTree(this.#deps.partitions.streamDir(id));
    }
  }

  /** The topic's options now, and its open partitions' logs written by them from the next write. */
  #applyOptions(topic: TopicEntry, options: TopicOptions): void {
    topic.meta = { ...topic.meta, options };
    const config = this.#deps.partitions.logConfig(options);
    for (const slot of topic.slots) if (slot.kind === "open") slot.partition.log.updateConfig(config);
  }

  /** The admin lock; a full queue of waiters is an overload, not a fault. */
  async #lockAdmin(): Promise<Permit> {
    try {
      return await this.#adminLock.acquire();
    } catch (error) {
      if (error instanceof QueueFullError) {
        throw new UnavailableError("overloaded", error.message, { cause: error });
      }
      throw error;
    }
  }

  #entry(streamName: string, topicName: string): TopicEntry {
    const topic = this.#topics.get(topicKey(streamName, topicName));
    if (topic === undefined) {
      this.stream(streamName);
      throw new ResourceNotFoundError(`Cannot find topic ${streamName}/${topicName}`);
    }
    return topic;
  }

  async #openTopic(stream: StreamMeta, meta: TopicMeta, missing: "refuse" | "create missing" = "refuse") {
    const names = { stream: stream.name, topic: meta.name };
    const slots = await concurrently(meta.options.partitions, partitionOpensInFlightMax, (p) => {
      const address = { streamId: stream.id, topicId: meta.id, partitionId: p };
      return missing === "refuse"
        ? this.#deps.partitions.open(address, meta.options, names)
        : this.#deps.partitions.openOrCreate(address, meta, names);
    });
    await this.#register({ streamId: stream.id, streamName: stream.name, meta, slots });
  }

  /**
   * Hosts the topic's partitions, `partitionsPerPieceMax` at a time with a yield to the event loop
   * between pieces (a topic of 1,024 partitions would otherwise hold the tick while all are hosted),
   * then makes the topic known.
   */
  async #register(topic: TopicEntry): Promise<void> {
    let hosted = 0;
    for (const slot of topic.slots) {
      if (slot.kind !== "open") continue;
      this.#deps.host.host(slot.partition, topic);
      if (++hosted % partitionsPerPieceMax === 0) await yieldToReactor();
    }
    this.#topics.set(topicKey(topic.streamName, topic.meta.name), topic);
  }

  async #closeTopic(streamName: string, topicName: string): Promise<void> {
    const topic = this.#topics.get(topicKey(streamName, topicName));
    if (topic === undefined) return;
    this.#topics.delete(topicKey(streamName, topicName));
    for (const slot of topic.slots) {
      if (slot.kind !== "open") continue;
      this.#deps.host.release(slot.partition);
      await slot.partition.close();
    }
  }
}

/** Partitions created or opened at once, for a topic's creation and at boot: their disk I/O overlaps. */
export const partitionOpensInFlightMax = 16;

/** Partitions hosted between two yields to the event loop when a topic is created or opened. */
export const partitionsPerPieceMax = 64;

function topicKey(stream: string, topic: string): string {
  return `${stream}\u0000${topic}`;
}

/** What the table needs of a catalog topic. */
interface TopicSlots {
  readonly streamId: number;
  readonly meta: { readonly id: number };
  readonly slots: readonly PartitionSlot[];
}

/**
 * The incarnation table of every partition the catalog serves (a refused one is "unreadable": its
 * objects are kept), with the incarnations restored topics of this cluster read from.
 */
export function incarnationTableOf(doc: Readonly<Metadata>, topics: Iterable<TopicSlots>): IncarnationTable {
  const table: Map<string, KnownPartition> & { referenced?: ReadonlySet<string> } = new Map();
  table.referenced = referencedIncarnations(doc);
  for (const topic of topics) {
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
