import { restoreFromBucket } from "../broker/restore/bucket_restore.ts";
import { createReadReplica } from "../broker/restore/read_replica_create.ts";
import type { ReadReplicaFollower } from "../broker/restore/read_replica_follower.ts";
import { Gauge } from "prom-client";
import { memoryUsage } from "node:process";
import type { Config } from "../config/config.ts";
import type { Clock } from "../runtime/clock/clock.ts";
import type { Disk } from "../runtime/disk/disk.ts";
import type { Logger } from "../runtime/logger.ts";
import { createMetricsRegistry, type Registry } from "../runtime/metrics/metrics.ts";
import type { Pump } from "../runtime/cooperation/pump.ts";
import type { Rng } from "../runtime/rng.ts";
import { chooseCrc32c, type NativeCrc32cOpener } from "./crc32c_choice.ts";
import { FileCacheDisk, OpenFileCache, registerOpenFileMetrics } from "../runtime/disk/open_files.ts";
import { GatedDisk } from "../runtime/disk/around_disk.ts";
import { ExternalMemoryReserve } from "../runtime/memory/external_memory_reserve.ts";
import { setLoopThreadNice, type ThreadControl } from "../runtime/process/thread_priority.ts";
import { growFdTable } from "../runtime/process/fd_table_reserve.ts";
import { ConfigError } from "../config/config_error.ts";
import { PieceGate } from "../runtime/cooperation/piece_gate.ts";
import { type OpenedObjectStore, openObjectStore } from "../objectstore/open_object_store.ts";
import { createHttpHandler, type FetchHandler } from "./http_handler.ts";
import { openBroker, type OpenedBroker } from "./open_broker.ts";
import type { Catalog } from "../broker/catalog/catalog.ts";
import type { ProducerIds } from "../broker/producer_ids.ts";
import type { DataPlane } from "../broker/data_plane.ts";
import type { ShardRuntime } from "../broker/shards/shard_runtime.ts";
import { requestBodyBufferBytes, requestBodyBuffersMax } from "./codec/request_body.ts";
import { BufferPool } from "../runtime/memory/buffers.ts";
import { ClusterNode } from "../cluster/node/cluster_node.ts";
import type { LeaderLinkFactory } from "../cluster/replication/replica_fetch.ts";
import { EtcdCoordinator } from "../coordinator/etcd/etcd_coordinator.ts";
import { markStorage, storageKnown } from "../cluster/replication/fresh_storage.ts";
import { CoordinatorUnavailableError } from "../coordinator/coordinator_errors.ts";
import type { HttpFetch } from "../coordinator/etcd/http_post.ts";
import type { Address } from "../config/key_spec.ts";
import type { GroupCoordinator } from "../groups/group_coordinator.ts";
import { openGroups } from "./open_groups.ts";
import type { TxnCoordinator } from "../transactions/txn_coordinator.ts";
import { type MarkerLinkFactory, openTransactions } from "./open_transactions.ts";
import type { LocalMarkerWriter } from "../transactions/markers/local_marker_writer.ts";

export interface ServerDeps {
  config: Config;
  logger: Logger;
  clock: Clock;
  disk: Disk;
  rng: Rng;
  registry?: Registry;
  /**
   * The system's thread scheduling, for `[system] loop_thread_nice`. Entry points pass
   * `OsThreadControl`; without one (tests sharing a process) no thread's priority is touched.
   */
  threads?: ThreadControl;
  /** With `[cluster] enabled`: how the node reaches etcd and its peers. */
  clusterIo?: ClusterIo;
  /** Opens `[system] crc32c_library`; without it the server checksums by WebAssembly. */
  openNativeCrc32c?: NativeCrc32cOpener;
}

/** The I/O a cluster node needs beyond the disk: HTTP to etcd, and replica fetch links to peers. */
export interface ClusterIo {
  fetch: HttpFetch;
  leaderLinks: (token: string) => LeaderLinkFactory;
  /** Links to peers for transaction markers; absent: a transaction's partitions led elsewhere wait. */
  markerLinks?: MarkerLinkFactory;
}

/** What the server is made of, once `StrataServer.open` has opened it. */
interface OpenedParts {
  cluster: ClusterNode | null;
  config: Config;
  logger: Logger;
  registry: Registry;
  broker: OpenedBroker;
  /** The object store, when tiered storage is enabled. */
  objectStore: OpenedObjectStore | null;
  pieceGate: PieceGate;
  reserve: ExternalMemoryReserve;
  /** The consumer groups' coordinator, with the Kafka listener; null without it. */
  groups: GroupCoordinator | null;
  /** The transaction coordinator, with the Kafka listener; null without it. */
  transactions: TxnCoordinator | null;
  /** The writer of the markers of partitions led here; null without the Kafka listener. */
  txnMarkers: LocalMarkerWriter | null;
}

/**
 * The server without its socket, and its composition root: the object store, the broker (catalog,
 * data plane, shards and their pumps), the metrics registry and the fetch handler. Runtime-neutral,
 * so tests run it under Node and `main.ts` serves it on Deno.
 */
export class StrataServer {
  readonly handler: FetchHandler;
  readonly registry: Registry;
  readonly catalog: Catalog;
  readonly dataPlane: DataPlane;
  /** The object store, when tiered storage is enabled. */
  readonly objectStore: OpenedObjectStore | null;
  /** One piece of work at a time in the process; other listeners (Kafka) take its turns too. */
  readonly pieceGate: PieceGate;
  readonly #broker: OpenedBroker;
  readonly #logger: Logger;
  readonly #reserve: ExternalMemoryReserve;
  /** This node's part in a cluster; null on a single node. */
  readonly cluster: ClusterNode | null;
  /** The consumer groups' coordinator, with the Kafka listener (`[kafka] enabled`); null without it. */
  readonly groups: GroupCoordinator | null;
  /** The transaction coordinator, with the Kafka listener (`[kafka] enabled`); null without it. */
  readonly transactions: TxnCoordinator | null;
  /** Writes the markers of partitions led here, for this node's coordinator and the others'. */
  readonly txnMarkers: LocalMarkerWriter | null;
  /** Ids for idempotent producers, given by the Kafka listener's InitProducerId. */
  readonly producerIds: ProducerIds;
  #closed = false;

  private constructor(parts: OpenedParts) {
    const { config, logger, registry, broker, objectStore, pieceGate, reserve, cluster, groups } = parts;
    this.cluster = cluster;
    this.groups = groups;
    this.transactions = parts.transactions;
    this.txnMarkers = parts.txnMarkers;
    this.registry = registry;
    this.#broker = broker;
    this.catalog = broker.catalog;
    this.dataPlane = broker.dataPlane;
    this.producerIds = broker.producerIds;
    this.objectStore = objectStore;
    this.pieceGate = pieceGate;
    this.#logger = logger;
    this.#reserve = reserve;
    this.handler = createHttpHandler({
      registry,
      pumps: broker.shards.pumps,
      catalog: broker.catalog,
      dataPlane: broker.dataPlane,
      logger,
      maxRequestBytes: config.http.maxRequestBytes,
      requestBodies: new BufferPool({
        bufferBytes: requestBodyBufferBytes,
        buffersMax: requestBodyBuffersMax,
      }),
      tokens: config.http.tokens,
      pieceGate,
      httpAddressOf: cluster === null ? undefined : (nodeId) => cluster.httpAddressOf(nodeId),
      groups,
      kafkaStream: config.kafka.stream,
      transactions: parts.transactions,
      restore: objectStore === null ? null : (request) =>
        restoreFromBucket({
          catalog: broker.catalog,
          store: objectStore.store,
          prefix: config.tieredStorage.s3.prefix,
          logger,
        }, request),
      readReplica: objectStore === null ? null : (stream, topic, source) =>
        createReadReplica(
          {
            catalog: broker.catalog,
            store: objectStore.store,
            prefix: config.tieredStorage.s3.prefix,
            logger,
            readsOtherBuckets: objectStore.store.readsOtherBuckets,
          },
          stream,
          topic,
          source,
        ),
    });
  }

  get pumps(): readonly Pump[] {
    return this.#broker.shards.pumps;
  }

  /** Keeps read-replica topics up with their sources; null without a bucket, and in a cluster. */
  get readReplicas(): ReadReplicaFollower | null {
    return this.#broker.readReplicas;
  }

  /** The shards, each running its partitions' duties from its pump. */
  get shards(): readonly ShardRuntime[] {
    return this.#broker.shards.shards;
  }

  static async open(deps: ServerDeps): Promise<StrataServer> {
    const { config, logger, clock, rng } = deps;
    const reserve = reserveExternalMemory(config.system.externalMemoryReserveBytes);
    // One loop, one gate: pieces of work and the resumptions of disk callers take turns of the
    // loop, so no turn carries more than one of them ahead of the consensus tick.
    const pieceGate = new PieceGate();
    // The files held between uses (active segments') share max_open_files handles, whatever the
    // number of partitions; the cache is inside the gate, so its closes and reopens take no turns.
    const openFiles = new OpenFileCache({ maxOpenFiles: config.system.maxOpenFiles });
    const disk = new GatedDisk(new FileCacheDisk(deps.disk, openFiles), pieceGate);
    logger.info("crc32c", { engine: await chooseCrc32c(config.system, deps.openNativeCrc32c, logger) });
    await disk.mkdirp(config.system.path);
    // On the disk itself, not through the gate: nothing is served yet, so its 1024 opens need no turns.
    await reserveFdTable(deps.disk, config, logger);
    const registry = deps.registry ?? createMetricsRegistry();
    registerProcessMetrics(registry);
    registerOpenFileMetrics(registry, openFiles);
    // The store is probed before anything else opens, so a misconfigured one stops start-up.
    const objectStore = config.tieredStorage.enabled
      ? await openObjectStore(config.tieredStorage, { disk, clock, rng, registry, logger })
      : null;
    const cluster = config.cluster.enabled ? await openClusterNode(deps, registry) : null;
    const broker = await openBroker({
      cluster,
      config,
      disk,
      clock,
      rng,
      logger,
      registry,
      objectStore: objectStore?.store ?? null,
      pieceGate,
    });
    const coordinators = config.kafka.enabled ? openCoordinators(deps, broker, cluster, registry) : null;
    // Last, so that the threads started while opening (the write worker's among them) keep the
    // priority they inherited rather than the loop's.
    if (deps.threads) applyLoopThreadNice(deps.threads, config.system.loopThreadNice, logger);
    logger.info("server opened", {
      data_path: config.system.path,
      tick_interval_ms: config.system.tickIntervalMs,
    });
    return new StrataServer({
      config,
      logger,
      registry,
      broker,
      objectStore,
      pieceGate,
      reserve,
      cluster,
      groups: coordinators?.groups ?? null,
      transactions: coordinators?.transactions.coordinator ?? null,
      txnMarkers: coordinators?.transactions.local ?? null,
    });
  }

  /** Stops the pumps and syncs and closes every partition. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.transactions?.close();
    await this.groups?.close();
    await this.#broker.close();
    await this.objectStore?.close();
    this.#reserve.release();
    this.#logger.info("server closed");
  }
}

/** The Kafka listener's coordinators: the consumer groups', and the transactions' with their markers. */
function openCoordinators(
  deps: ServerDeps,
  broker: OpenedBroker,
  cluster: ClusterNode | null,
  registry: Registry,
) {
  const { config, clock, logger } = deps;
  const groups = openGroups({
    config,
    catalog: broker.catalog,
    data: broker.dataPlane,
    shards: broker.shards.shards,
    clock,
    rng: deps.rng,
    logger,
  });
  const markerLinks = deps.clusterIo?.markerLinks;
  const transactions = openTransactions({
    config,
    catalog: broker.catalog,
    data: broker.dataPlane,
    shards: broker.shards.shards,
    producerIds: broker.producerIds,
    groups,
    cluster: cluster === null || markerLinks === undefined ? null : { node: cluster, markerLinks },
    clock,
    logger,
    registry,
  });
  return { groups, transactions };
}

/** Joins the cluster of `[cluster]`: etcd through its JSON gateway, peers through `clusterIo`. */
async function openClusterNode(deps: ServerDeps, registry: Registry): Promise<ClusterNode> {
  const { config, clock, rng, logger } = deps;
  if (deps.clusterIo === undefined) {
    throw new ConfigError(
      "[cluster] enabled",
      "this entry point cannot run a cluster node (no network for it)",
    );
  }
  const address = (advertised: Address | null, bound: Address) => {
    const { hostname, port } = advertised ?? bound;
    return `${hostname}:${port}`;
  };
  const coordinator = new EtcdCoordinator({
    endpoints: config.cluster.etcdEndpoints,
    fetch: deps.clusterIo.fetch,
    clock,
    requestTimeoutMs: config.cluster.etcdRequestTimeoutMs,
  });
  // A data directory without the marker is new: the node leaves the in-sync sets it may still be
  // listed in before it registers, and marks the directory once it has.
  const freshStorage = !(await storageKnown(deps.disk, config.system.path));
  try {
    const node = await ClusterNode.open({
      config: config.cluster,
      coordinator,
      clock,
      rng,
      logger,
      registry,
      configuredClusterId: config.system.clusterId,
      kafkaAddress: address(config.kafka.advertisedAddress, config.kafka.address),
      httpAddress: address(config.http.advertisedAddress, config.http.address),
      leaderLinks: deps.clusterIo.leaderLinks,
      freshStorage,
    });
    if (freshStorage) await markStorage(deps.disk, config.system.path, config.cluster.nodeId);
    return node;
  } catch (error) {
    await coordinator.close();
    if (error instanceof CoordinatorUnavailableError) {
      throw new ConfigError("[cluster] etcd_endpoints", `no etcd member could be reached: ${error.message}`, {
        cause: error,
      });
    }
    throw error;
  }
}

/**
 * Sets the loop thread's configured nice value and logs the outcome; a refusal is a warning, not a
 * start-up error, because an unprivileged server may not raise its priority and still works.
 */
export function applyLoopThreadNice(control: ThreadControl, nice: number, logger: Logger): void {
  const outcome = setLoopThreadNice(control, nice);
  if (outcome.kind === "refused") {
    logger.warn(
      `Cannot set the event loop thread's nice value to ${nice}: ${outcome.reason}; it keeps ${outcome.keptNice}`,
      { key: "[system] loop_thread_nice" },
    );
    return;
  }
  if (outcome.kind === "set") logger.info("loop thread priority", { nice, was_nice: outcome.wasNice });
}

/** Grows the descriptor table before anything is served, and says so, or why it stopped short. */
export async function reserveFdTable(disk: Disk, config: Config, logger: Logger): Promise<void> {
  const descriptors = config.system.fdTableReserve;
  const growth = await growFdTable(disk, `${config.system.path}/.fd-table-reserve`, descriptors);
  if (growth.error !== null) {
    logger.warn(
      `Cannot hold ${descriptors} descriptors to grow the descriptor table: ${growth.error}; held ${growth.heldMax}`,
      { key: "[system] fd_table_reserve" },
    );
  }
}

/** The reserve, or a start-up error naming its key when the address space is not there. */
export function reserveExternalMemory(
  sizeBytes: number,
  allocate?: (sizeBytes: number) => ArrayBuffer,
): ExternalMemoryReserve {
  try {
    return new ExternalMemoryReserve(sizeBytes, allocate);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    throw new ConfigError(
      "[system] external_memory_reserve",
      `${sizeBytes} bytes of address space could not be reserved (${error.message}); set it lower, or 0`,
      { cause: error },
    );
  }
}

function registerProcessMetrics(registry: Registry): void {
  new Gauge({
    name: "strata_process_resident_memory_bytes",
    help: "Resident set size of the server process.",
    registers: [registry],
    collect() {
      this.set(memoryUsage.rss());
    },
  });
}
