import t from "tap";
import { EtcdCoordinator } from "../../src/coordinator/etcd/etcd_coordinator.ts";
import { ClusterKeys } from "../../src/cluster/node/cluster_keys.ts";
import { encodePartitionState, noLeader } from "../../src/cluster/controller/partition_state.ts";
import { assignReplicas } from "../../src/cluster/controller/replica_assignment.ts";
import { RealClock } from "../../src/runtime/clock/real_clock.ts";
import { type ControlPlaneNode, openControlPlaneNode } from "../helpers/control_plane_node.ts";
import { etcdUnavailableReason, startEtcd } from "../helpers/harnesses/etcd_harness.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

const clock = new RealClock();
const leaseTtlMs = 2000;

/** The waits of the test: real time, checked every 5 ms. */
const pace = realTime(5);

const controllers = (nodes: ControlPlaneNode[]) => nodes.filter((n) => n.controller.epoch() !== null);

t.test("the control plane on a real 3-member etcd", {
  skip: etcdUnavailableReason() ?? false,
  timeout: 120_000,
}, async (t) => {
  const etcd = startEtcd(t, 27_790);
  const coordinator = () =>
    new EtcdCoordinator({
      endpoints: etcd.endpoints,
      fetch: (u, i) => fetch(u, i),
      clock,
      requestTimeoutMs: 1000,
    });
  const prefix = `/cp-${process.pid}`;
  const nodes: ControlPlaneNode[] = [];
  const clients: EtcdCoordinator[] = [];
  t.teardown(async () => {
    for (const node of nodes) await node.close();
    for (const client of clients) await client.close();
  });
  for (const id of [1, 2, 3]) {
    const client = coordinator();
    clients.push(client);
    nodes.push(await openControlPlaneNode(client, clock, id, prefix, leaseTtlMs));
  }
  const keys = new ClusterKeys(prefix);
  await clients[0]!.txn({
    compare: [],
    success: assignReplicas(6, [1, 2, 3], 3, 0).map((state, p) => ({
      kind: "put" as const,
      key: keys.partition({ streamId: 1, topicId: 1, partitionId: p }),
      value: encodePartitionState(state),
    })),
  });
  await waitFor("one controller and every view complete", () =>
    controllers(nodes).length === 1 &&
    nodes.every((n) => n.view.partitions().size === 6 && n.view.liveNodes().length === 3), {
    deadlineMs: 5000,
    pace,
  });

  t.test("one etcd member killed changes nothing", async (t) => {
    const before = JSON.stringify([...nodes[0]!.view.partitions().values()].map((p) => p.state));
    const controller = controllers(nodes)[0]!;
    etcd.kill(1);
    // Longer than a lease: keepalives must have moved to the other members.
    await clock.sleep(2 * leaseTtlMs);
    t.ok(nodes.every((n) => n.session.leaseHeld()), "every lease still held");
    t.equal(controllers(nodes)[0], controller, "the same controller");
    t.equal(JSON.stringify([...nodes[0]!.view.partitions().values()].map((p) => p.state)), before);
    etcd.restart(1);
  });

  t.test("the controller paused: its lease lapses by its own clock, a new controller moves its partitions", async (t) => {
    const victim = controllers(nodes)[0]!;
    const others = nodes.filter((n) => n !== victim);
    const pausedAtMs = clock.nowMs();
    victim.pause();
    await waitFor("the victim to fence itself", () => !victim.session.leaseHeld(), {
      deadlineMs: 2 * leaseTtlMs,
      pace,
    });
    const fencedAtMs = clock.nowMs();
    t.ok(
      fencedAtMs - pausedAtMs <= leaseTtlMs + 50,
      `fenced ${Math.round(fencedAtMs - pausedAtMs)} ms after the pause`,
    );
    await waitFor(
      "every partition led by a live node",
      () =>
        others.every((n) =>
          [...n.view.partitions().values()].every((p) =>
            p.state.leader !== victim.nodeId && p.state.leader !== noLeader
          )
        ),
      { deadlineMs: 3 * leaseTtlMs + 2000, pace },
    );
    const movedAtMs = clock.nowMs();
    const failoverMs = Math.round(movedAtMs - pausedAtMs);
    t.ok(fencedAtMs <= movedAtMs, "the old controller stopped before its partitions moved");
    t.ok(
      failoverMs <= leaseTtlMs + 1000,
      `partitions moved ${failoverMs} ms after the pause (lease_ttl + 1 s at most)`,
    );
    t.equal(controllers(others).length, 1);
    victim.resume();
    await waitFor("the victim to rejoin", () => others[0]!.view.liveNodes().length === 3, {
      deadlineMs: 3 * leaseTtlMs + 2000,
      pace,
    });
    t.equal(controllers(nodes).length, 1, "one controller after the rejoin");
  });
});
