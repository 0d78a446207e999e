import { labelOf } from "../../log/partition/partition.ts";
import { Rng } from "../../runtime/rng.ts";
import { reliableNetwork } from "../sim_network.ts";
import { bucketSegments, checkSealedIdentical, checkStep, committedFloor } from "./cluster_checks.ts";
import { applyEvent, restart } from "./cluster_events.ts";
import { gcWindow } from "./cluster_gc.ts";
import type { ClusterScenario, ScheduledEvent } from "./cluster_scenarios.ts";
import { simTopicOptions, streamName, topicName } from "./cluster_settings.ts";
import { clusterStreams, clusterStreamSeed } from "./cluster_streams.ts";
import { advance, until, withTime } from "./cluster_time.ts";
import {
  liveInFlight,
  produceIdempotent,
  produceOne,
  produceTransactional,
  readBack,
} from "./cluster_workload.ts";
import { ClusterWorld, type EventCounts } from "./cluster_world.ts";
import * as inv from "./cluster_invariants.ts";
import { killProcess } from "./sim_cluster_node.ts";

export interface ClusterSimOptions {
  seed: number;
  scenario: ClusterScenario;
  /** Steps of the workload (10 ms of virtual time each); faults strike in the first 70 %. */
  steps: number;
}

export interface ClusterSimResult {
  seed: number;
  scenario: string;
  ok: boolean;
  violation: string | null;
  trail: readonly string[];
  traceHash: string;
  events: number;
  acknowledged: number;
  crashes: number;
  floor: number;
  virtualMs: number;
  counts: EventCounts;
  /** Merges' objects in the bucket at the end: the merges the leaders made. */
  mergedObjects: number;
}

/** The part of the run in which faults and events strike; the rest checks recovery. */
const activeFraction = 0.7;
/** How long the cluster has to form, and the topic's replicas to open. */
const setUpDeadlineMs = 30_000;
/** How long the healed cluster has to converge: every replica caught up with the leader. */
const livenessDeadlineMs = 60_000;
/** Chance per step that the workload sends a message. */
const produceChance = 0.5;

/**
 * One deterministic run of three nodes: each the real composition on its own simulated disk, with
 * the shared bucket, the simulated coordinator and network, on one virtual clock. The seed decides
 * the workload, the faults and the events; the invariants are checked after every step, and at
 * the end, once healed, the cluster must converge, hold identical sealed segments, read back every
 * acknowledged record, and collect every orphan within GC's window.
 */
export async function runClusterSimulation(o: ClusterSimOptions): Promise<ClusterSimResult> {
  const w = new ClusterWorld(o.seed, o.scenario);
  try {
    await setUp(w);
    const activeSteps = Math.floor(o.steps * activeFraction);
    const events = o.scenario.schedule(
      new Rng(clusterStreamSeed(o.seed, clusterStreams.schedule)),
      activeSteps,
    );
    await runSteps(w, o.steps, activeSteps, events);
    if (w.violation === null) await endPhases(w);
  } catch (error) {
    w.fail(`the run failed: ${(error as Error).message}`);
  } finally {
    for (const node of w.nodes) killProcess(w, node, false);
  }
  return {
    seed: o.seed,
    scenario: o.scenario.name,
    ok: w.violation === null,
    violation: w.violation,
    trail: w.trace.trail,
    traceHash: w.trace.hash,
    events: w.trace.events,
    acknowledged: w.promises.acknowledged.size,
    crashes: w.crashes,
    floor: w.promises.floorSeen,
    virtualMs: w.clock.nowMs(),
    counts: { ...w.counts },
    mergedObjects: bucketSegments(w).filter((o) => o.merged).length,
  };
}

/** The three nodes start, the topic is created on one, and every replica opens under a leader. */
async function setUp(w: ClusterWorld): Promise<void> {
  for (const node of w.nodes) {
    restart(w, node);
    if (!(await until(w, () => node.life !== null, setUpDeadlineMs))) {
      throw new Error(`node ${node.id} did not start`);
    }
  }
  const first = w.nodes[0]!.life!;
  const seen = await until(
    w,
    () => first.cluster.view.liveNodes().length === w.nodes.length,
    setUpDeadlineMs,
  );
  if (!seen) throw new Error("node 1 did not see every node live");
  await withTime(w, first.broker.catalog.createStream(streamName), setUpDeadlineMs);
  await withTime(
    w,
    first.broker.catalog.createTopic(streamName, topicName, simTopicOptions()),
    setUpDeadlineMs,
  );
  const topic = first.broker.catalog.topic(streamName, topicName);
  const address = { streamId: topic.streamId, topicId: topic.meta.id, partitionId: 0 };
  w.partition = { address, label: labelOf(address) };
  w.clusterId = first.cluster.metadata.doc.clusterId;
  const formed = await until(
    w,
    () => w.leader() !== null && w.nodes.every((n) => n.partition(w) !== null),
    setUpDeadlineMs,
  );
  if (!formed) throw new Error("the topic's replicas did not open under a leader");
  w.record(`formed: node ${w.leader()!.id} leads ${w.partition.label}`);
}

async function runSteps(
  w: ClusterWorld,
  steps: number,
  activeSteps: number,
  events: ScheduledEvent[],
): Promise<void> {
  const eventRng = new Rng(clusterStreamSeed(w.seed, clusterStreams.schedule) + 1);
  const waiting: { event: ScheduledEvent; waited: number }[] = [];
  for (let step = 0; step < steps && w.violation === null; step++) {
    if (step === activeSteps) healAll(w);
    while (events.length > 0 && events[0]!.step <= step) waiting.push({ event: events.shift()!, waited: 0 });
    for (const due of [...waiting]) {
      if (!w.faultsActive || applyEvent(w, eventRng, due.event.event, due.waited++)) {
        waiting.splice(waiting.indexOf(due), 1);
      }
    }
    if (w.workload.chance(produceChance)) {
      produceOne(w);
      produceIdempotent(w);
      produceTransactional(w);
    }
    await advance(w);
    checkStep(w);
  }
}

/** The faults end: every heal and restart due runs now, the network is reliable, dead nodes start. */
function healAll(w: ClusterWorld): void {
  w.faultsActive = false;
  w.record("faults stop");
  for (const task of w.tasks.splice(0)) {
    w.record(task.what);
    task.run();
  }
  w.network.faults = reliableNetwork;
  w.bucket.faults = {};
  for (const node of w.nodes) if (node.life === null) restart(w, node);
}

/** Once healed: liveness, identical sealed segments, the read-back, and GC's window. */
async function endPhases(w: ClusterWorld): Promise<void> {
  if (w.faultsActive) healAll(w);
  // Every produce in flight answered first: one acknowledged after the read-back began would be
  // missing from what it read. The transactional producer ends its last transaction meanwhile.
  const converged = await until(
    w,
    () => {
      if (!w.transactional.settled()) produceTransactional(w);
      return w.partition !== null && liveInFlight(w) === 0 && w.transactional.settled() && caughtUp(w);
    },
    livenessDeadlineMs,
  );
  if (!converged) {
    return w.fail(`the healed cluster did not converge within ${livenessDeadlineMs} ms: ${replicasOf(w)}`);
  }
  checkSealedIdentical(w);
  if (w.violation !== null) return;
  const read = await withTime(w, readBack(w), livenessDeadlineMs);
  if (read === null) return w.fail("the read-back did not end");
  w.fail(inv.acknowledgedPresent(w.promises.acknowledged, read.value));
  w.fail(inv.noValueTwice(read.value));
  if (w.violation === null) await readBackCommitted(w);
  if (w.violation === null) await gcWindow(w);
  w.record(`end floor=${committedFloor(w)?.upToOffset ?? 0} acked=${w.promises.acknowledged.size}`);
}

/**
 * The read_committed read-back: every acknowledged record of the plain and idempotent producers,
 * and the transactional producer's transactions whole or not at all.
 */
async function readBackCommitted(w: ClusterWorld): Promise<void> {
  const read = await withTime(w, readBack(w, true), livenessDeadlineMs);
  if (read === null) return w.fail("the read_committed read-back did not end");
  const untransacted = [...w.promises.acknowledged].filter(([, value]) => !inv.isTransactional(value));
  w.fail(inv.acknowledgedPresent(new Map(untransacted), read.value));
  w.fail(inv.atomicallyVisible(w.promises.txnOutcomes, read.value));
  w.record(
    `read_committed: ${read.value.size} records, ${w.promises.txnOutcomes.size} transactional values ended`,
  );
}

/** Every node runs, one leads, and every replica's log ends where the leader's high watermark is. */
function caughtUp(w: ClusterWorld): boolean {
  const leader = w.leader()?.partition(w);
  if (leader === null || leader === undefined) return false;
  const end = leader.log.nextOffset;
  return leader.log.highWatermark === end &&
    w.nodes.every((n) => n.partition(w)?.log.nextOffset === end);
}

/** Each node's replica as the liveness check saw it: its role, log end and high watermark. */
function replicasOf(w: ClusterWorld): string {
  return w.nodes.map((n) => {
    const log = n.partition(w)?.log;
    if (log === undefined) return `node ${n.id} ${n.life === null ? "down" : "without the partition"}`;
    const role = n.life?.cluster.replicas.role(w.partition!.address);
    return `node ${n.id} ${role?.kind ?? "?"} end ${log.nextOffset} hw ${log.highWatermark}`;
  }).join("; ");
}
