import { NotReplicatedError } from "../../broker/broker_errors.ts";
import type { Rng } from "../../runtime/rng.ts";
import { labelOf } from "../../log/partition/partition.ts";
import { bucketSegments } from "./cluster_checks.ts";
import { simTopicOptions, streamName, topicName } from "./cluster_settings.ts";
import type { ClusterEvent, EventTarget } from "./cluster_scenarios.ts";
import { type ClusterWorld, newPromises } from "./cluster_world.ts";
import { killProcess, setEtcdCut, type SimClusterNode, startProcess } from "./sim_cluster_node.ts";

/** How long a restart refused (etcd unreachable) waits before the next attempt. */
const restartRetryMs = 1000;
/** Steps a crash in the middle of an upload waits for one to be in flight before it gives up. */
const midUploadWaitStepsMax = 200;

/** The node an event strikes: the leader, or a live follower drawn from `rng`; null when there is none. */
function targetOf(w: ClusterWorld, rng: Rng, target: EventTarget): SimClusterNode | null {
  const leader = w.leader();
  if (target === "leader") return leader;
  const followers = w.nodes.filter((n) => n !== leader && n.life !== null && n.partition(w) !== null);
  return followers.length === 0 ? null : followers[rng.int(0, followers.length - 1)]!;
}

/**
 * Starts the node's process in the background; the workload goes on meanwhile. A start that fails
 * (etcd unreachable) is retried a second later; while the faults are over, a failure is a violation.
 */
export function restart(w: ClusterWorld, node: SimClusterNode): void {
  if (node.life !== null || node.starting) return;
  node.starting = true;
  startProcess(w, node).then(
    () =>
      w.record(
        `node ${node.id} started (process ${node.lives}, registered at ${node.life?.cluster.session.registeredRevision})`,
      ),
    (error) => {
      w.record(`node ${node.id} could not start: ${(error as Error).message}`);
      w.later(restartRetryMs, `restart node ${node.id}`, () => restart(w, node));
    },
  ).finally(() => (node.starting = false));
}

function crash(w: ClusterWorld, node: SimClusterNode, wipe: boolean, downMs: number): void {
  w.crashes++;
  if (wipe) w.counts.wipes++;
  w.record(`crash node ${node.id}${wipe ? ", data directory wiped" : ""}`);
  killProcess(w, node, wipe);
  w.later(downMs, `restart node ${node.id}`, () => restart(w, node));
}

/** Cuts the node off from etcd for `ms`; the heal applies to whichever process then runs. */
function cutFromEtcd(w: ClusterWorld, node: SimClusterNode, ms: number): void {
  setEtcdCut(w, node, true);
  w.later(ms, `node ${node.id} reaches etcd again`, () => setEtcdCut(w, node, false));
}

/** Runs one event; false when it waits for its moment (a crash mid-upload with none in flight yet). */
export function applyEvent(w: ClusterWorld, rng: Rng, event: ClusterEvent, waitedSteps: number): boolean {
  switch (event.kind) {
    case "crash": {
      const node = targetOf(w, rng, event.target);
      if (node !== null) crash(w, node, event.wipe, event.downMs);
      return true;
    }
    case "crashMidUpload": {
      const leader = w.leader();
      const uploading = (leader?.life?.broker.shards.shards[0]?.tier?.uploadsInFlight() ?? 0) > 0;
      if (!uploading && waitedSteps < midUploadWaitStepsMax) return false;
      if (leader !== null) {
        w.record(`the leader crashes ${uploading ? "mid-upload" : "with no upload in flight"}`);
        if (uploading) w.counts.crashesMidUpload++;
        crash(w, leader, false, event.downMs);
      }
      return true;
    }
    case "isolate":
      isolate(w, event.ms);
      return true;
    case "etcdCut": {
      const node = targetOf(w, rng, event.target);
      if (node !== null) cutFromEtcd(w, node, event.ms);
      return true;
    }
    case "etcdOutage":
      etcdOutage(w, event.ms);
      return true;
    case "netCut":
      netCut(w, rng, event.ms);
      return true;
    case "purgeDuringLeaderChange":
      purgeDuringLeaderChange(w, event.downMs);
      return true;
    case "recreateTopic":
      recreateTopic(w);
      return true;
  }
}

/** The leader keeps running cut off from etcd and from its peers: it must be fenced. */
function isolate(w: ClusterWorld, ms: number): void {
  const leader = w.leader();
  if (leader === null) return;
  w.record(`isolate the leader, node ${leader.id}`);
  cutFromEtcd(w, leader, ms);
  for (const other of w.nodes) {
    if (other === leader) continue;
    w.network.setCut(leader.id, other.id, true);
    w.later(ms, `heal ${leader.id}-${other.id}`, () => w.network.setCut(leader.id, other.id, false));
  }
}

function etcdOutage(w: ClusterWorld, ms: number): void {
  w.record("etcd unavailable");
  w.etcdDown = true;
  for (const node of w.nodes) setEtcdCut(w, node, true);
  w.later(ms, "etcd available again", () => {
    w.etcdDown = false;
    for (const node of w.nodes) setEtcdCut(w, node, false);
  });
}

function netCut(w: ClusterWorld, rng: Rng, ms: number): void {
  const a = w.nodes[rng.int(0, w.nodes.length - 1)]!;
  const others = w.nodes.filter((n) => n !== a);
  const b = others[rng.int(0, others.length - 1)]!;
  w.record(`cut ${a.id}-${b.id}`);
  w.network.setCut(a.id, b.id, true);
  w.later(ms, `heal ${a.id}-${b.id}`, () => w.network.setCut(a.id, b.id, false));
}

/** The leader dies; another node is asked to purge the topic meanwhile, which a cluster must refuse. */
function purgeDuringLeaderChange(w: ClusterWorld, downMs: number): void {
  const leader = w.leader();
  if (leader === null) return;
  crash(w, leader, false, downMs);
  const other = w.nodes.find((n) => n.life !== null);
  if (other === undefined) return;
  other.life!.broker.dataPlane.purgeTopic(streamName, topicName).then(
    () => w.fail(`node ${other.id} purged the topic in cluster mode`),
    (error) =>
      error instanceof NotReplicatedError
        ? (w.counts.purgesRefused++, w.record(`purge refused by node ${other.id}`))
        : w.fail(`node ${other.id} refused the purge with ${(error as Error).name}, not NotReplicatedError`),
  );
}

/**
 * The topic is deleted on a live node and, once that is done, created again (on any live node,
 * tried again a second later until it is): a new life, with nothing promised of the old one. The
 * workload and the checks pause meanwhile.
 */
function recreateTopic(w: ClusterWorld): void {
  const node = w.nodes.find((n) => n.life !== null);
  const old = w.partition;
  if (node === undefined || old === null) return;
  w.partition = null;
  w.record(`delete the topic on node ${node.id}`);
  node.life!.broker.catalog.deleteTopic(streamName, topicName).then(
    () => {
      w.topicLife++;
      w.promises = newPromises();
      const objects = bucketSegments(w).length;
      w.counts.deadTopicObjects += objects;
      w.record(`topic deleted with ${objects} segments in the bucket`);
      createTopicAgain(w);
    },
    (error) => {
      w.record(`the topic was not deleted: ${(error as Error).message}`);
      w.partition = old;
    },
  );
}

function createTopicAgain(w: ClusterWorld): void {
  const node = w.nodes.find((n) =>
    n.life !== null && n.life.cluster.view.liveNodes().length === w.nodes.length
  );
  const retry = () => w.later(restartRetryMs, "create the topic again", () => createTopicAgain(w));
  if (node === undefined) return retry();
  const catalog = node.life!.broker.catalog;
  catalog.createTopic(streamName, topicName, simTopicOptions()).then(
    () => {
      const topic = catalog.topic(streamName, topicName);
      const address = { streamId: topic.streamId, topicId: topic.meta.id, partitionId: 0 };
      w.partition = { address, label: labelOf(address) };
      w.counts.topicsRecreated++;
      w.record(`topic created again on node ${node.id}: ${w.partition.label}`);
    },
    (error) => {
      w.record(`the topic was not created: ${(error as Error).message}`);
      retry();
    },
  );
}
