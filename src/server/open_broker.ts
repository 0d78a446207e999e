import { Catalog, type PartitionHost } from "../broker/catalog/catalog.ts";
import { DataPlane, singleNode } from "../broker/data_plane.ts";
import { LocalMetadataStore } from "../broker/metadata/local_metadata_store.ts";
import { ProducerIds } from "../broker/producer_ids.ts";
import { registerProducerMetrics } from "../broker/shards/producer_metrics.ts";
import { PartitionOpener } from "../broker/catalog/partition_opener.ts";
import { ShardRuntime, ShardSet } from "../broker/shards/shard_runtime.ts";
import { topicDefaultsOf } from "../broker/catalog/topic_options.ts";
import type { Config } from "../config/config.ts";
import type { DeadlineObjectStore } from "../objectstore/retrying_object_store.ts";
import type { Clock } from "../runtime/clock/clock.ts";
import type { Disk } from "../runtime/disk/disk.ts";
import type { Logger } from "../runtime/logger.ts";
import type { Registry } from "../runtime/metrics/metrics.ts";
import type { PieceGate } from "../runtime/cooperation/piece_gate.ts";
import { Pump } from "../runtime/cooperation/pump.ts";
import { PumpMetrics } from "../runtime/cooperation/pump_metrics.ts";
import type { Rng } from "../runtime/rng.ts";
import { TieredComposition } from "./tiered_composition.ts";
import { ReadReplicaFollower } from "../broker/restore/read_replica_follower.ts";
import { ReadReplicaMetrics } from "../broker/restore/read_replica_metrics.ts";
import type { ClusterNode } from "../cluster/node/cluster_node.ts";
import type { HostedTopic } from "../broker/catalog/hosted_topic.ts";
import type { Partition } from "../log/partition/partition.ts";

export interface BrokerDeps {
  config: Config;
  disk: Disk;
  clock: Clock;
  rng: Rng;
  logger: Logger;
  registry: Registry;
  /** The object store, when tiered storage is enabled: each shard then runs a tier service. */
  objectStore: DeadlineObjectStore | null;
  /**
   * The process's piece gate: one event loop per process, so one piece of work per turn of it,
   * whichever shard does it. The disk's callers resume on the same gate (`GatedDisk`).
   */
  pieceGate: PieceGate;
  /** This node's part in a cluster, opened; null on a single node. */
  cluster: ClusterNode | null;
}

/** The broker layer as the server runs it: the catalog, the data plane over it, and the shards. */
export interface OpenedBroker {
  catalog: Catalog;
  dataPlane: DataPlane;
  shards: ShardSet;
  /** Keeps read-replica topics up with their sources; null without a bucket, and in a cluster. */
  readReplicas: ReadReplicaFollower | null;
  /** Ids for idempotent producers, taken in blocks from the metadata the cluster shares. */
  producerIds: ProducerIds;
  /** Stops the shards and closes every partition, syncing its log. */
  close(): Promise<void>;
}

/**
 * Wires the broker: the metadata (kept in a local file), one runtime per shard with its pump and,
 * with tiered storage, its tier service, chunk cache, control log and housekeeping
 * (`TieredComposition`); the catalog, which opens every partition the metadata names; and the data
 * plane. The only place that knows which metadata store and control log implementations the
 * broker runs on.
 */
export async function openBroker(deps: BrokerDeps): Promise<OpenedBroker> {
  const { config, disk, clock, logger } = deps;
  const dataPath = config.system.path;
  await disk.mkdirp(`${dataPath}/streams`);
  const cluster = deps.cluster;
  // In a cluster the metadata is the one document in etcd every node shares (loaded already).
  const metadata = cluster?.metadata ??
    new LocalMetadataStore(disk, dataPath, deps.rng, config.system.clusterId);
  if (cluster === null) await metadata.load();
  const pumpMetrics = new PumpMetrics(deps.registry);
  const tiered = deps.objectStore === null
    ? null
    : await TieredComposition.open(deps, deps.objectStore, metadata.doc.clusterId);
  const shards = await openShards(deps, pumpMetrics, tiered);
  const defaults = topicDefaultsOf(config.tieredStorage);
  const catalog = await Catalog.open({
    store: metadata,
    disk,
    clock,
    logger,
    partitions: new PartitionOpener({
      disk,
      clock,
      rng: deps.rng,
      logger,
      settings: config.system,
      sharedRevisions: cluster !== null,
      seeder: cluster === null || tiered === null
        ? undefined
        : tiered.stateTransfer((label) => cluster.committedFloor(label)),
    }),
    host: cluster === null ? shards : new HostPair(shards, cluster.replicas),
    topicDefaults: defaults,
    admitTopic: cluster === null ? undefined : (options) => cluster.admitTopic(options),
    sharedMetadata: cluster !== null,
  });
  // Opened after the partitions: the replay applies committed floors to them.
  for (const shard of shards.shards) {
    if (shard.tier !== null && tiered !== null) await tiered.attachControlLog(shard, shard.tier, catalog);
  }
  shards.startPumps();
  const readReplicas = followReadReplicas(deps, catalog, shards);
  if (cluster !== null) {
    shards.shards[0]!.pump.onTick("cluster", (nowMs) => cluster.tick(nowMs));
    cluster.startFetching({ batchBytesMax: Infinity, turn: () => deps.pieceGate.turn() });
  }
  logger.info("broker opened", {
    cluster_id: metadata.doc.clusterId,
    streams: metadata.doc.streams.length,
    shards: shards.shards.length,
  });
  return {
    catalog,
    dataPlane: new DataPlane(catalog, shards, cluster?.replicas ?? singleNode),
    shards,
    readReplicas,
    producerIds: new ProducerIds(metadata),
    close: async () => {
      await readReplicas?.stop();
      // The node leaves the cluster first (its lease revoked: its partitions move at once), then
      // the partitions are synced and closed, even when a shard fails to close.
      try {
        await cluster?.close();
        await shards.close();
      } finally {
        await catalog.close();
      }
    },
  };
}

/** One runtime per shard, each with its pump and, with tiered storage, its tiering; their producers' metrics. */
async function openShards(
  deps: BrokerDeps,
  pumpMetrics: PumpMetrics,
  tiered: TieredComposition | null,
): Promise<ShardSet> {
  const { config, clock, logger } = deps;
  const shards: ShardRuntime[] = [];
  for (let id = 0; id < config.system.shards; id++) {
    const shardLogger = logger.child({ shard: String(id) });
    const pump = new Pump({
      clock,
      metrics: pumpMetrics,
      logger: shardLogger,
      shard: String(id),
      tickIntervalMs: config.system.tickIntervalMs,
    });
    const tiering = tiered === null ? null : await tiered.shardTiering(id, shardLogger);
    shards.push(
      new ShardRuntime({ id, pump, logger: shardLogger, pieceGate: deps.pieceGate, clock, tiering }),
    );
  }
  const set = new ShardSet(shards);
  registerProducerMetrics(deps.registry, set);
  return set;
}

/** Two hosts for the catalog's partitions: the shards, and the cluster's replica manager. */
class HostPair implements PartitionHost {
  readonly #first: PartitionHost;
  readonly #second: PartitionHost;

  constructor(first: PartitionHost, second: PartitionHost) {
    this.#first = first;
    this.#second = second;
  }

  host(partition: Partition, topic: HostedTopic): void {
    this.#first.host(partition, topic);
    this.#second.host(partition, topic);
  }

  release(partition: Partition): void {
    this.#second.release(partition);
    this.#first.release(partition);
  }

  purged(partition: Partition): void {
    this.#first.purged(partition);
    this.#second.purged(partition);
  }
}

/**
 * The follower of the read-replica topics, polling from shard 0's tick; null without a bucket, and
 * in a cluster (where read replicas are refused).
 */
function followReadReplicas(
  deps: BrokerDeps,
  catalog: Catalog,
  shards: ShardSet,
): ReadReplicaFollower | null {
  if (deps.objectStore === null || deps.cluster !== null) return null;
  const follower = new ReadReplicaFollower({
    catalog,
    store: deps.objectStore,
    clock: deps.clock,
    logger: deps.logger.child({ component: "read_replicas" }),
    prefix: deps.config.tieredStorage.s3.prefix,
    pollIntervalMs: deps.config.tieredStorage.readReplicaPollIntervalMs,
    metrics: new ReadReplicaMetrics(deps.registry),
  });
  shards.shards[0]!.pump.onTick("read_replicas", (nowMs) => follower.onTick(nowMs));
  return follower;
}
