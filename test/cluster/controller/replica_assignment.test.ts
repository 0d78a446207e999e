import t from "tap";
import { assignReplicas } from "../../../src/cluster/controller/replica_assignment.ts";
import {
  decodePartitionState,
  encodePartitionState,
} from "../../../src/cluster/controller/partition_state.ts";
import { ClusterKeys } from "../../../src/cluster/node/cluster_keys.ts";

t.test("replicas are consecutive live nodes from a moving start, each partition led by its first", (t) => {
  const states = assignReplicas(4, [3, 1, 2], 2, 0);
  t.same(states.map((s) => s.replicas), [[1, 2], [2, 3], [3, 1], [1, 2]]);
  t.same(states.map((s) => s.leader), [1, 2, 3, 1]);
  t.ok(states.every((s) => s.leaderEpoch === 0 && s.isr.join() === s.replicas.join()));
  t.same(assignReplicas(2, [1, 2, 3], 3, 1).map((s) => s.replicas), [[2, 3, 1], [3, 1, 2]]);
  t.throws(() => assignReplicas(1, [1, 2], 3, 0), /Cannot place 3 replicas on 2 live nodes/);
  t.end();
});

t.test("a partition state survives its encoding, and a damaged one is refused naming its key", (t) => {
  const state = { leader: 2, leaderEpoch: 7, isr: [2, 3], replicas: [1, 2, 3] };
  t.same(decodePartitionState("k", encodePartitionState(state)), state);
  t.throws(
    () => decodePartitionState("/p/1/1/0", "{"),
    /Cannot read the partition state at \/p\/1\/1\/0: not JSON/,
  );
  t.throws(() => decodePartitionState("k", `{"leader":1}`), /fields missing/);
  t.throws(
    () => decodePartitionState("k", `{"leader":4,"leader_epoch":0,"isr":[1],"replicas":[1]}`),
    /Leader 4 is not in sync/,
  );
  t.throws(
    () => encodePartitionState({ leader: 1, leaderEpoch: 0, isr: [1, 5], replicas: [1, 2] }),
    /not within/,
  );
  t.end();
});

t.test("cluster keys name nodes and partitions and read them back", (t) => {
  const keys = new ClusterKeys("/strata");
  t.equal(keys.node(3), "/strata/nodes/3");
  t.equal(keys.nodeIdOf("/strata/nodes/3"), 3);
  t.equal(keys.nodeIdOf("/strata/nodes/x"), null);
  const address = { streamId: 1, topicId: 2, partitionId: 9 };
  t.equal(keys.partition(address), "/strata/partitions/1/2/9");
  t.same(keys.addressOf(keys.partition(address)), address);
  t.equal(keys.addressOf("/strata/partitions/1/2"), null);
  t.throws(() => new ClusterKeys("/strata/"));
  t.end();
});
