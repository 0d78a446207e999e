import { ClusterNode } from "../../cluster/node/cluster_node.ts";
import type { Config } from "../../config/config.ts";
import { serveReplicaFetch } from "../../cluster/replication/replica_serving.ts";
import type { ReplicaFetchResponse } from "../../cluster/replication/replica_fetch.ts";
import type { Partition } from "../../log/partition/partition.ts";
import { RetryingObjectStore } from "../../objectstore/retrying_object_store.ts";
import { FileCacheDisk, OpenFileCache } from "../../runtime/disk/open_files.ts";
import { GatedDisk } from "../../runtime/disk/around_disk.ts";
import { Logger } from "../../runtime/logger.ts";
import { createMetricsRegistry } from "../../runtime/metrics/metrics.ts";
import { PieceGate } from "../../runtime/cooperation/piece_gate.ts";
import { Rng } from "../../runtime/rng.ts";
import { openBroker, type OpenedBroker } from "../../server/open_broker.ts";
import { IoScheduler } from "../io_scheduler.ts";
import { SimDisk } from "../sim_disk.ts";
import { clusterStreams, nodeStreamSeed } from "./cluster_streams.ts";
import { dataPath, diskCapacityBytes, nodeConfig } from "./cluster_settings.ts";
import { markStorage, storageKnown } from "../../cluster/replication/fresh_storage.ts";
import { ProcessClock } from "./process_clock.ts";
import type { ClusterWorld } from "./cluster_world.ts";

/** The retrying store client's deadlines per request kind, retries included. */
const storeDeadlines = { putMs: 10_000, getMs: 5000, otherMs: 10_000 };
/** Log lines one process keeps, newest last; the rest are dropped. */
const processLogLinesMax = 200;

/** One life of a node's process: what a crash ends. */
export interface NodeLife {
  /** Counts the node's processes from 1. */
  no: number;
  clock: ProcessClock;
  /** The process's view of the node's disk; a crash revokes it. */
  disk: IoScheduler;
  /** The coordinator client's name; a crash cuts it off for good. */
  coordinatorName: string;
  cluster: ClusterNode;
  broker: OpenedBroker;
  /** The process's last log lines (warnings and errors). */
  logs: string[];
}

/**
 * One node of the simulated cluster: its disk, which outlives its processes, and the process now
 * running on it, if one is. A process is the real composition (`ClusterNode.open` and
 * `openBroker`: log, replication, tier service, chunk cache, housekeeping) on the node's disk, the
 * shared bucket, the simulated coordinator and network, and its own `ProcessClock`.
 */
export class SimClusterNode {
  readonly id: number;
  raw: SimDisk;
  life: NodeLife | null = null;
  lives = 0;
  /** Wiped data directories so far: each wipe is a new disk. */
  wipes = 0;
  /** A process is being started. */
  starting = false;
  /** Cut off from etcd now (the live process's client). */
  etcdCut = false;

  constructor(id: number, seed: number) {
    this.id = id;
    this.raw = newDisk(seed, id, 0);
  }

  /** The process's replica of the partition, when it runs and hosts one. */
  partition(w: ClusterWorld): Partition | null {
    const p = w.partition;
    if (this.life === null || p === null) return null;
    return this.life.cluster.replicas.partition(p.address);
  }

  /** The partition's leader epoch when this process leads it now, else null. */
  leaderEpoch(w: ClusterWorld): number | null {
    const p = w.partition;
    if (this.life === null || p === null) return null;
    const role = this.life.cluster.replicas.role(p.address);
    return role?.kind === "leader" ? role.core.leaderEpoch : null;
  }
}

function newDisk(seed: number, nodeId: number, wipes: number): SimDisk {
  const rng = new Rng(nodeStreamSeed(seed, clusterStreams.disk, nodeId, wipes));
  return new SimDisk(rng, { capacityBytes: diskCapacityBytes });
}

/** Starts a process on the node's disk: recovery from what the last crash kept, then the node joins. */
export async function startProcess(w: ClusterWorld, node: SimClusterNode): Promise<void> {
  if (node.life !== null) throw new Error(`Cannot start node ${node.id}: a process runs on it`);
  const no = ++node.lives;
  const clock = new ProcessClock(w.clock);
  const completion = new Rng(nodeStreamSeed(w.seed, clusterStreams.completion, node.id, no));
  const disk = new IoScheduler(node.raw, completion, () => {}, () => {});
  const rng = new Rng(nodeStreamSeed(w.seed, clusterStreams.process, node.id, no));
  const logs: string[] = [];
  const logger = new Logger({
    level: "warn",
    sink: (line) => logs.push(line) > processLogLinesMax && logs.shift(),
    context: { node: node.id },
    wallMs: () => clock.wallMs(),
  });
  const config = nodeConfig(node.id);
  const coordinatorName = `node-${node.id}#${no}`;
  w.coordinator.client(coordinatorName);
  node.etcdCut = w.etcdDown;
  w.coordinator.setReachable(coordinatorName, !w.etcdDown);
  try {
    node.life = await openLife(w, node, { no, clock, disk, coordinatorName, logs, config, rng, logger });
  } catch (error) {
    // A start that failed leaves nothing running; its lease, if it got one, expires by the clock.
    clock.kill();
    disk.revoke();
    w.coordinator.setReachable(coordinatorName, false);
    throw error;
  }
}

interface LifeParts {
  no: number;
  clock: ProcessClock;
  disk: IoScheduler;
  coordinatorName: string;
  logs: string[];
  config: Config;
  rng: Rng;
  logger: Logger;
}

/** The process's composition, as `StrataServer.open` wires it, less the listeners; then it serves fetches. */
async function openLife(w: ClusterWorld, node: SimClusterNode, parts: LifeParts): Promise<NodeLife> {
  const { clock, disk, config, rng, logger } = parts;
  const coordinator = w.coordinator.client(parts.coordinatorName);
  const pieceGate = new PieceGate();
  const gatedDisk = new GatedDisk(
    new FileCacheDisk(disk, new OpenFileCache({ maxOpenFiles: 256 })),
    pieceGate,
  );
  const registry = createMetricsRegistry();
  const store = new RetryingObjectStore(
    w.bucket,
    clock,
    rng,
    config.tieredStorage.retry,
    storeDeadlines,
    null,
  );
  await disk.mkdirp(dataPath);
  const freshStorage = !(await storageKnown(disk, dataPath));
  const cluster = await ClusterNode.open({
    config: config.cluster,
    coordinator,
    clock,
    rng,
    logger,
    registry,
    configuredClusterId: "",
    kafkaAddress: `127.0.0.1:${9090 + node.id}`,
    httpAddress: `127.0.0.1:${8080 + node.id}`,
    leaderLinks: () => w.network.linkFactory(node.id),
    freshStorage,
  });
  if (freshStorage) await markStorage(disk, dataPath, node.id);
  const broker = await openBroker({
    config,
    disk: gatedDisk,
    clock,
    rng,
    logger,
    registry,
    objectStore: store,
    pieceGate,
    cluster,
  });
  // The simulated network carries no credential: it joins the cluster's nodes only.
  w.network.serve(node.id, async (request) => {
    const served = await serveReplicaFetch(cluster.replicas, clock, request, logger);
    return copied(served.response, served.release);
  });
  return { ...parts, cluster, broker };
}

/** The answer with its batches copied out of the log's buffers, which are released. */
function copied(response: ReplicaFetchResponse, release: () => void): ReplicaFetchResponse {
  try {
    return {
      ...response,
      partitions: response.partitions.map((p) => ({ ...p, records: p.records.map((r) => r.slice()) })),
    };
  } finally {
    release();
  }
}

/**
 * The node's process dies at once: its timers never fire, its disk view refuses every operation,
 * its coordinator client is cut off (its lease expires by the clock), and it serves no fetch. The
 * disk keeps what a crash keeps; `wipe` loses it all (a new disk). Synchronous, as a kill is.
 */
export function killProcess(w: ClusterWorld, node: SimClusterNode, wipe: boolean): void {
  const life = node.life;
  if (life !== null) {
    life.clock.kill();
    life.disk.revoke();
    w.coordinator.setReachable(life.coordinatorName, false);
    w.network.serve(node.id, null);
    node.life = null;
  }
  node.raw.crash();
  if (wipe) node.raw = newDisk(w.seed, node.id, ++node.wipes);
}

/** Cuts the live process off from etcd (its requests fail, its watches hear nothing), or heals it. */
export function setEtcdCut(w: ClusterWorld, node: SimClusterNode, cut: boolean): void {
  if (node.life === null) return;
  node.etcdCut = cut;
  w.coordinator.setReachable(node.life.coordinatorName, !cut);
}
