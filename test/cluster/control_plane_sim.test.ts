import t, { type Test } from "tap";
import { SimCoordinatorStore } from "../../src/coordinator/sim_coordinator.ts";
import { ClusterKeys } from "../../src/cluster/node/cluster_keys.ts";
import { encodePartitionState, noLeader } from "../../src/cluster/controller/partition_state.ts";
import { assignReplicas } from "../../src/cluster/controller/replica_assignment.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { type ControlPlaneNode, openControlPlaneNode } from "../helpers/control_plane_node.ts";
import { virtualTime, waitFor } from "../helpers/wait_for.ts";

const prefix = "/sim";
const keys = new ClusterKeys(prefix);
const leaseTtlMs = 2000;

/** A wait on virtual time in 10 ms steps, promises settled after each, for at most `deadlineMs` of it. */
const virtually = (clock: VirtualClock, deadlineMs: number) => ({ deadlineMs, pace: virtualTime(clock, 10) });

async function cluster(t: Test) {
  const clock = new VirtualClock();
  const store = new SimCoordinatorStore({ clock, watchLagMs: 2 });
  const nodes: ControlPlaneNode[] = [];
  for (const id of [1, 2, 3]) {
    nodes.push(await openControlPlaneNode(store.client(`node-${id}`), clock, id, prefix, leaseTtlMs));
  }
  t.teardown(async () => {
    for (const node of nodes) await node.close();
  });
  // Six partitions over the three nodes, two led by each, written as the controller would.
  const states = assignReplicas(6, [1, 2, 3], 3, 0);
  const admin = store.client("admin");
  await admin.txn({
    compare: [],
    success: states.map((state, p) => ({
      kind: "put" as const,
      key: keys.partition({ streamId: 1, topicId: 1, partitionId: p }),
      value: encodePartitionState(state),
    })),
  });
  await waitFor(
    "every view to see the partitions",
    () => nodes.every((n) => n.view.partitions().size === 6),
    virtually(clock, 1000),
  );
  return { clock, store, nodes };
}

const controllers = (nodes: ControlPlaneNode[]) => nodes.filter((n) => n.controller.epoch() !== null);

t.test("exactly one node holds the controller seat; its epoch is the seat's create revision", async (t) => {
  const { clock, store, nodes } = await cluster(t);
  await waitFor("a controller", () => controllers(nodes).length === 1, virtually(clock, 1000));
  const seat = (await store.client("admin").range({ key: keys.controller })).kvs[0]!;
  const [held] = controllers(nodes);
  t.equal(held!.controller.epoch(), seat.createRevision);
  t.equal(Number(seat.value), held!.nodeId);
  t.same(nodes.map((n) => n.view.liveNodes()), [[1, 2, 3], [1, 2, 3], [1, 2, 3]]);
  t.same(nodes.map((n) => n.view.controller()?.nodeId), [held!.nodeId, held!.nodeId, held!.nodeId]);
});

t.test("a paused node loses its lease after lease_ttl: its partitions move to in-sync replicas", async (t) => {
  const { clock, nodes } = await cluster(t);
  await waitFor("a controller", () => controllers(nodes).length === 1, virtually(clock, 1000));
  const victim = controllers(nodes)[0]!;
  const others = nodes.filter((n) => n !== victim);
  const pausedAtMs = clock.nowMs();
  victim.pause();
  // By its own clock the paused node stops holding its lease within lease_ttl.
  await waitFor(
    "the victim to see its lease lapse",
    () => !victim.session.leaseHeld(),
    virtually(clock, leaseTtlMs + 100),
  );
  t.ok(clock.nowMs() - pausedAtMs <= leaseTtlMs, "it fences itself no later than the lease ends in etcd");
  t.equal(victim.controller.epoch(), null, "and stops acting as controller");
  await waitFor(
    "every partition led by a live node",
    () =>
      others.every((n) =>
        [...n.view.partitions().values()].every((p) =>
          p.state.leader !== victim.nodeId && p.state.leader !== noLeader
        )
      ),
    virtually(clock, 3 * leaseTtlMs),
  );
  const movedAtMs = clock.nowMs();
  t.ok(movedAtMs - pausedAtMs <= leaseTtlMs + 1000, `moved ${movedAtMs - pausedAtMs} ms after the pause`);
  const view = others[0]!.view;
  for (const p of view.partitions().values()) {
    t.notOk(p.state.isr.includes(victim.nodeId), "the gone node left every in-sync set");
    t.equal(p.state.replicas.length, 3, "replicas stay assigned");
  }
  const moved = [...view.partitions().values()].filter((p) => p.state.leaderEpoch === 1);
  t.equal(moved.length, 2, "only the victim's two partitions changed leader, one epoch on");
  t.equal(controllers(others).length, 1, "another node controls the cluster");
  t.same(view.liveNodes(), others.map((n) => n.nodeId));

  // Resumed, it registers under a new lease and rejoins; it leads nothing until reassigned.
  victim.resume();
  await waitFor(
    "the victim to rejoin",
    () => others[0]!.view.liveNodes().length === 3,
    virtually(clock, 3 * leaseTtlMs),
  );
  t.ok(victim.session.leaseHeld());
  t.equal(controllers(nodes).length, 1, "still one controller");
  t.ok(victim.logs.some((l) => l.includes("registering again")));
});

t.test("with every in-sync replica gone a partition has no leader, and gets one back when one returns", async (t) => {
  const { clock, nodes } = await cluster(t);
  await waitFor("a controller", () => controllers(nodes).length === 1, virtually(clock, 1000));
  const survivor = controllers(nodes)[0]!;
  const [other, third] = nodes.filter((n) => n !== survivor) as [ControlPlaneNode, ControlPlaneNode];
  other.pause();
  third.pause();
  const states = () => [...other.view.partitions().values()].map((p) => p.state);
  await waitFor(
    "the survivor to lead everything alone",
    () =>
      [...survivor.view.partitions().values()].every((p) =>
        p.state.leader === survivor.nodeId && p.state.isr.join() === String(survivor.nodeId)
      ),
    virtually(clock, 3 * leaseTtlMs),
  );
  // A node that was not in sync returns; then the only in-sync one goes.
  other.resume();
  await waitFor(
    "the other node to rejoin",
    () => survivor.view.liveNodes().includes(other.nodeId),
    virtually(clock, 3 * leaseTtlMs),
  );
  survivor.pause();
  await waitFor(
    "every partition to be without a leader",
    () => states().every((s) => s.leader === noLeader),
    virtually(clock, 3 * leaseTtlMs),
  );
  t.ok(
    states().every((s) => s.isr.join() === String(survivor.nodeId)),
    "the in-sync set keeps the last leader",
  );
  t.equal(other.controller.epoch() !== null, true, "the returned node controls the cluster");
  const epochs = states().map((s) => s.leaderEpoch);
  survivor.resume();
  await waitFor(
    "the last in-sync replica to lead again",
    () => states().every((s) => s.leader === survivor.nodeId),
    virtually(clock, 3 * leaseTtlMs),
  );
  t.same(states().map((s) => s.leaderEpoch), epochs.map((e) => e + 1), "under the next epoch");
});

t.test("a topic gone from the metadata takes its partition states and its committed floors with it", async (t) => {
  const { clock, store, nodes } = await cluster(t);
  await waitFor("a controller", () => controllers(nodes).length === 1, virtually(clock, 1000));
  const admin = store.client("admin");
  const doc = (topics: unknown[]) =>
    JSON.stringify({
      version: 2,
      clusterId: "c",
      nextStreamId: 2,
      streams: [{ id: 1, name: "s", createdAtMs: 0, nextTopicId: 3, topics }],
    });
  const topic = (id: number) => ({
    id,
    name: `t${id}`,
    createdAtMs: 0,
    options: { partitions: 2, replicationFactor: 3 },
  });
  await admin.txn({ compare: [], success: [{ kind: "put", key: keys.metadata, value: doc([topic(2)]) }] });
  const states = () => admin.range({ key: keys.topicPartitions(1, 2), prefix: true });
  await waitFor(
    "the controller to place topic 2",
    () => nodes[0]!.view.partition({ streamId: 1, topicId: 2, partitionId: 1 }) !== null,
    virtually(clock, 2000),
  );
  t.equal((await states()).kvs.length, 2);
  // Its leader committed floors; another topic's floor is not this one's.
  const floor = JSON.stringify({ purge_generation: 0, up_to_offset: 10, leader_epoch: 0 });
  await admin.txn({
    compare: [],
    success: ["1/2/0", "1/2/1", "1/20/0"].map((label) => ({
      kind: "put" as const,
      key: keys.floor(label),
      value: floor,
    })),
  });
  await admin.txn({ compare: [], success: [{ kind: "put", key: keys.metadata, value: doc([]) }] });
  await waitFor(
    "the partition states to go",
    () => nodes[0]!.view.partition({ streamId: 1, topicId: 2, partitionId: 0 }) === null,
    virtually(clock, 2000),
  );
  t.equal((await states()).kvs.length, 0, "no partition state left");
  const floors = (await admin.range({ key: keys.floors, prefix: true })).kvs.map((kv) => kv.key);
  t.same(floors, [keys.floor("1/20/0")], "its floors deleted, not another topic's");
});
