import { settlePlantedDir } from "../../log/remote/remote_planting.ts";
import type { Config } from "../../config/config.ts";
import type { LogConfig } from "../../log/log_config.ts";
import { labelOf, Partition, type PartitionAddress, partitionDir } from "../../log/partition/partition.ts";
import { superblockFileName } from "../../log/partition/superblock.ts";
import {
  type PartitionSeed,
  type PartitionSeeder,
  writeSeededPartition,
} from "../../log/partition/seeded_partition.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { Rng } from "../../runtime/rng.ts";
import { restoredChainOf, type TopicMeta } from "../metadata/metadata.ts";
import { fnv1a32 } from "../shards/shard_runtime.ts";
import type { TopicOptions } from "./topic_options.ts";

/**
 * A partition slot of a topic: open, or refused at boot with the error that refused it and its
 * message, which the refusals of the partition's requests repeat (the error is their cause).
 */
export type PartitionSlot =
  | { kind: "open"; partition: Partition }
  | { kind: "refused"; reason: string; error: unknown };

/** The server settings every partition log shares, besides its topic's options. */
export type LogSettings = Pick<
  Config["system"],
  "path" | "indexIntervalBytes" | "fsync" | "fsyncIntervalMs" | "writeQueueMax" | "producerIdExpirationMs"
>;

export interface PartitionOpenerDeps {
  disk: Disk;
  clock: Clock;
  rng: Rng;
  logger: Logger;
  settings: LogSettings;
  /**
   * In a cluster: every replica of a partition takes the same created revision, derived from its
   * topic's record in the shared metadata, so that its objects in the bucket have the same keys
   * whichever replica uploads or reads them. On a single node (absent, false): a random one.
   */
  sharedRevisions?: boolean;
  /**
   * In a cluster with tiered storage: where a new replica of a tiered partition takes the tiered
   * part of its log from (the bucket), so that it fetches only the rest from its leader.
   */
  seeder?: PartitionSeeder;
}

/**
 * Creates and opens the partitions of topics under the data directory (`{path}/streams/{stream
 * id}/topics/{topic id}/partitions/{partition}`), and turns a partition that cannot be opened into
 * a refused slot with its reason, so that the others still serve.
 */
export class PartitionOpener {
  /** `{path}/streams`: the directory of every stream's. */
  readonly streamsDir: string;
  readonly #deps: PartitionOpenerDeps;

  constructor(deps: PartitionOpenerDeps) {
    this.#deps = deps;
    this.streamsDir = `${deps.settings.path}/streams`;
  }

  /** The directory of a stream, which holds its topics'. */
  streamDir(streamId: number): string {
    return `${this.streamsDir}/${streamId}`;
  }

  /** The directory of a topic, which holds its partitions'. */
  topicDir(streamId: number, topicId: number): string {
    return `${this.streamDir(streamId)}/topics/${topicId}`;
  }

  /**
   * A new partition of the topic `meta`: empty, or with `seed` (a restore's: markers of the objects
   * it takes from the bucket, and an empty active segment at the offset after them).
   */
  async create(
    address: PartitionAddress,
    meta: TopicMeta,
    seed: PartitionSeed | null = null,
  ): Promise<Partition> {
    const { disk, clock, rng, settings, logger } = this.#deps;
    if (seed !== null) {
      await writeSeededPartition(disk, partitionDir(settings.path, address), seed);
      return Partition.open(disk, clock, settings.path, address, this.logConfig(meta.options), logger);
    }
    if (!this.#deps.sharedRevisions) {
      return Partition.create(disk, clock, rng.hex64(), settings.path, address, this.logConfig(meta.options));
    }
    // A restored partition created empty copies its leader's log: its oldest segments keep the source's keys.
    const restored = restoredChainOf(meta, address.partitionId)?.source ?? null;
    const revision = replicaCreatedRevision(address, meta);
    return Partition.create(
      disk,
      clock,
      revision,
      settings.path,
      address,
      this.logConfig(meta.options),
      restored,
    );
  }

  /** An existing partition, or why it cannot serve (logged with its directory and error). */
  async open(
    address: PartitionAddress,
    options: TopicOptions,
    names: { stream: string; topic: string },
  ): Promise<PartitionSlot> {
    const { disk, clock, settings, logger } = this.#deps;
    try {
      if (options.readReplicaOf !== null) {
        // A planting a crash cut short is put right before recovery reads the directory.
        const dir = partitionDir(settings.path, address);
        const settled = await settlePlantedDir(disk, dir, labelOf(address), logger);
        if (settled !== null && (settled.droppedMarkers > 0 || settled.floorRewritten)) {
          logger.warn("read replica's planting finished at boot", {
            ...names,
            partition: address.partitionId,
            ...settled,
          });
        }
      }
      const partition = await Partition.open(
        disk,
        clock,
        settings.path,
        address,
        this.logConfig(options),
        logger,
      );
      return { kind: "open", partition };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      logger.error("partition refused", {
        stream: names.stream,
        topic: names.topic,
        partition: address.partitionId,
        dir: partitionDir(settings.path, address),
        reason,
        error,
      });
      return { kind: "refused", reason, error };
    }
  }

  /**
   * The partition, created first when its directory has no superblock yet: a topic another node
   * of the cluster created, which this node opens when it hears of it.
   */
  async openOrCreate(
    address: PartitionAddress,
    meta: TopicMeta,
    names: { stream: string; topic: string },
  ): Promise<PartitionSlot> {
    const dir = partitionDir(this.#deps.settings.path, address);
    if (await this.#deps.disk.stat(`${dir}/${superblockFileName}`) === null) {
      const seeded = await this.#seeded(address, meta, names);
      if (seeded !== null) return seeded;
      try {
        return { kind: "open", partition: await this.create(address, meta) };
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        this.#deps.logger.error("partition refused", {
          ...names,
          partition: address.partitionId,
          dir,
          reason,
        });
        return { kind: "refused", reason, error };
      }
    }
    const slot = await this.open(address, meta.options, names);
    if (slot.kind === "open" && this.#deps.sharedRevisions) {
      await this.#adoptSharedRevision(slot.partition, meta, names);
    }
    return slot;
  }

  /**
   * A new replica of a tiered partition with a committed floor, seeded from the bucket and opened;
   * null when there is nothing to seed from. A transfer that fails is logged and leaves no file:
   * the replica is created empty and copies everything from its leader instead.
   */
  async #seeded(
    address: PartitionAddress,
    meta: TopicMeta,
    names: { stream: string; topic: string },
  ): Promise<PartitionSlot | null> {
    const { seeder, disk, settings, logger } = this.#deps;
    if (seeder === undefined || !meta.options.tiered || !this.#deps.sharedRevisions) return null;
    const dir = partitionDir(settings.path, address);
    const restored = restoredChainOf(meta, address.partitionId);
    try {
      const seed = await seeder.seedFor(address, replicaCreatedRevision(address, meta), restored);
      if (seed === null) return null;
      await writeSeededPartition(disk, dir, seed);
    } catch (error) {
      await disk.removeTree(dir);
      logger.warn("Cannot seed the partition from the bucket; copying it from its leader instead", {
        ...names,
        partition: address.partitionId,
        error,
      });
      return null;
    }
    return await this.open(address, meta.options, names);
  }

  /**
   * A partition created before its replicas shared one created revision takes the shared one, so
   * that the topic can be tiered later; one already tiered under its own keeps it, and says so.
   */
  async #adoptSharedRevision(
    partition: Partition,
    meta: TopicMeta,
    names: { stream: string; topic: string },
  ) {
    const shared = replicaCreatedRevision(partition.address, meta);
    if (await partition.adoptCreatedRevision(shared)) return;
    this.#deps.logger.error("partition keeps a created revision of its own: its replicas' objects differ", {
      ...names,
      partition: partition.address.partitionId,
      created_revision: partition.superblock.createdRevision,
      shared_revision: shared,
    });
  }

  /** How a partition of a topic with these options writes its log. */
  logConfig(options: TopicOptions): LogConfig {
    const settings = this.#deps.settings;
    return {
      segmentSizeBytes: options.segmentSizeBytes,
      segmentMaxAgeMs: options.segmentMaxAgeMs,
      indexIntervalBytes: settings.indexIntervalBytes,
      fsync: settings.fsync,
      fsyncIntervalMs: settings.fsyncIntervalMs,
      writeQueueMax: settings.writeQueueMax,
      timestampType: options.timestampType,
      producerIdExpirationMs: settings.producerIdExpirationMs,
    };
  }
}

/**
 * The created revision every replica of a partition takes: a restored partition's source's (its
 * segments are that incarnation's objects), or else the one derived from the metadata.
 */
export function replicaCreatedRevision(address: PartitionAddress, meta: TopicMeta): string {
  return restoredChainOf(meta, address.partitionId)?.source.createdRevision ??
    sharedCreatedRevision(address, meta);
}

/**
 * A partition's created revision as every replica derives it: 64 bits hashed from the partition's
 * address and its topic's id, name and creation time in the shared metadata. A topic deleted and
 * created again (even under the same ids, after etcd was wiped) has another creation time.
 */
export function sharedCreatedRevision(address: PartitionAddress, meta: TopicMeta): string {
  const text =
    `${address.streamId}/${address.topicId}/${address.partitionId}/${meta.name}/${meta.createdAtMs}`;
  const halves = [fnv1a32(text), fnv1a32(`strata:${text}`)];
  return halves.map((h) => h.toString(16).padStart(8, "0")).join("");
}
