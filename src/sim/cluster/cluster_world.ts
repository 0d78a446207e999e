import { SimCoordinatorStore } from "../../coordinator/sim_coordinator.ts";
import { ClusterKeys } from "../../cluster/node/cluster_keys.ts";
import { SimObjectStore } from "../../objectstore/sim_object_store.ts";
import { Rng } from "../../runtime/rng.ts";
import { VirtualClock } from "../../runtime/clock/virtual_clock.ts";
import { SimNetwork } from "../sim_network.ts";
import { Trace } from "../trace.ts";
import { clusterStreams, clusterStreamSeed } from "./cluster_streams.ts";
import { etcdPrefix, nodeIds, type SimPartition } from "./cluster_settings.ts";
import type { ClusterScenario } from "./cluster_scenarios.ts";
import { SimClusterNode } from "./sim_cluster_node.ts";
import { IdempotentSimProducer } from "./idempotent_producer.ts";
import { TransactionalSimProducer } from "./transactional_producer.ts";

/** A produce the workload sent and has not heard the end of. */
export interface PendingProduce {
  value: string;
  nodeId: number;
  /** The process it went to: a dead process's produce never ends. */
  life: number;
  leaderEpoch: number;
  /** The life of the topic it went to: an answer for a deleted topic promises nothing now. */
  topicLife: number;
}

/** Something due at a later virtual time: a restart, a heal. */
export interface WorldTask {
  atMs: number;
  what: string;
  run(): void;
}

/** What the run's events did, counted: the tests check that a scenario's events struck. */
export interface EventCounts {
  /** Leaders killed with an upload in flight. */
  crashesMidUpload: number;
  /** Data directories lost. */
  wipes: number;
  /** Purges asked for and refused (a cluster cannot purge). */
  purgesRefused: number;
  /** Topics deleted and created again. */
  topicsRecreated: number;
  /** `.log` objects in the bucket when a topic was deleted: GC's work. */
  deadTopicObjects: number;
  /** Changes of the node that leads under the highest epoch. */
  leaderChanges: number;
}

/** Tasks pending at once, at most. */
export const worldTasksMax = 1000;

/** What the workload was promised and what the checks have seen so far. */
export interface ClusterPromises {
  /** Acknowledged values by offset. */
  acknowledged: Map<number, string>;
  /** The node whose writes were acknowledged under each leader epoch. */
  ackedLeaderOf: Map<number, number>;
  /** The highest high watermark seen under each leader epoch. */
  highWatermarkOf: Map<number, number>;
  /** The highest committed floor seen. */
  floorSeen: number;
  /** The highest last stable offset seen under each leader epoch. */
  lastStableOffsetOf: Map<number, number>;
  /** Each transactional value's transaction's end, once its marker was acknowledged. */
  txnOutcomes: Map<string, "commit" | "abort">;
}

/** Nothing promised yet: a new topic's offsets and epochs start over. */
export function newPromises(): ClusterPromises {
  return {
    acknowledged: new Map(),
    ackedLeaderOf: new Map(),
    highWatermarkOf: new Map(),
    floorSeen: 0,
    lastStableOffsetOf: new Map(),
    txnOutcomes: new Map(),
  };
}

/**
 * Everything one cluster run holds: the virtual clock, the coordinator, the bucket and the network
 * every node shares, the nodes, the workload's record of what it was promised, and the trace.
 */
export class ClusterWorld {
  readonly seed: number;
  readonly scenario: ClusterScenario;
  readonly clock = new VirtualClock();
  readonly coordinator: SimCoordinatorStore;
  readonly bucket: SimObjectStore;
  readonly network: SimNetwork;
  readonly keys = new ClusterKeys(etcdPrefix);
  readonly nodes: SimClusterNode[];
  readonly workload: Rng;
  readonly trace = new Trace(1000);
  /** The workload's partition, once created. */
  partition: SimPartition | null = null;
  /** The bucket's cluster id, once the metadata holds it. */
  clusterId = "";
  readonly pending = new Set<PendingProduce>();
  promises: ClusterPromises = newPromises();
  /** Counts the topic's lives: each deletion and creation again starts a new one. */
  topicLife = 0;
  /** Tasks due later (restarts, heals), by due time. */
  readonly tasks: WorldTask[] = [];
  /** Every node is cut off from etcd (a process started meanwhile too). */
  etcdDown = false;
  /** The leader the checks last saw ("node N epoch E", or "none"). */
  leaderSeen = "none";
  /** The partition's stored state the checks last saw. */
  stateSeen = "none";
  producesSent = 0;
  /** The run's idempotent producer, beside the plain produces. */
  readonly idempotent = new IdempotentSimProducer();
  /** The run's transactional producer, which also writes its transactions' markers. */
  readonly transactional = new TransactionalSimProducer();
  readonly counts: EventCounts = {
    crashesMidUpload: 0,
    wipes: 0,
    purgesRefused: 0,
    topicsRecreated: 0,
    deadTopicObjects: 0,
    leaderChanges: 0,
  };
  crashes = 0;
  /** Faults and events strike only while this is set. */
  faultsActive = true;
  violation: string | null = null;

  constructor(seed: number, scenario: ClusterScenario) {
    const rng = (stream: number) => new Rng(clusterStreamSeed(seed, stream));
    this.seed = seed;
    scenario = { ...scenario, ...(scenario.draw?.(rng(clusterStreams.faults)) ?? {}) };
    this.scenario = scenario;
    this.workload = rng(clusterStreams.workload);
    this.coordinator = new SimCoordinatorStore({ clock: this.clock, watchLagMs: scenario.watchLagMs });
    this.bucket = new SimObjectStore(this.clock, rng(clusterStreams.bucket), scenario.bucketFaults);
    this.network = new SimNetwork(this.clock, rng(clusterStreams.network), scenario.network);
    this.nodes = nodeIds.map((id) => new SimClusterNode(id, seed));
  }

  node(id: number): SimClusterNode {
    const node = this.nodes.find((n) => n.id === id);
    if (node === undefined) throw new Error(`Cannot find node ${id}: the cluster has ${nodeIds.join(", ")}`);
    return node;
  }

  /** The live node that leads the partition under the highest epoch, if one does. */
  leader(): SimClusterNode | null {
    let best: SimClusterNode | null = null;
    for (const node of this.nodes) {
      const epoch = node.leaderEpoch(this);
      if (epoch !== null && (best === null || epoch > best.leaderEpoch(this)!)) best = node;
    }
    return best;
  }

  /**
   * A produce of `value` sent now to `leader` (whose process is `lifeNo`), counted in flight: the
   * read-back waits until every answer is in.
   */
  addPending(value: string, leader: SimClusterNode, lifeNo: number): PendingProduce {
    const pending: PendingProduce = {
      value,
      nodeId: leader.id,
      life: lifeNo,
      leaderEpoch: leader.leaderEpoch(this)!,
      topicLife: this.topicLife,
    };
    this.pending.add(pending);
    return pending;
  }

  /** Runs `run` `ms` from now, at the first step at or past it. */
  later(ms: number, what: string, run: () => void): void {
    if (this.tasks.length >= worldTasksMax) {
      throw new Error(`Cannot schedule ${what}: ${worldTasksMax} tasks pending`);
    }
    this.tasks.push({ atMs: this.clock.nowMs() + ms, what, run });
    this.tasks.sort((a, b) => a.atMs - b.atMs);
  }

  /** Runs the tasks that are due, in due order. */
  runDueTasks(): void {
    while (this.tasks.length > 0 && this.tasks[0]!.atMs <= this.clock.nowMs()) {
      const task = this.tasks.shift()!;
      this.record(task.what);
      task.run();
    }
  }

  record(event: string): void {
    this.trace.record(this.clock.nowMs(), event);
  }

  /** Keeps the first violation (null is none), and records it. */
  fail(what: string | null): void {
    if (what !== null && this.violation === null) {
      this.violation = what;
      this.record(`VIOLATION ${what}`);
    }
  }
}
