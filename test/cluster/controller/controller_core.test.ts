import t from "tap";
import {
  type ControllerEvent,
  type ControllerState,
  controllerStep,
  decidePartition,
  initialControllerState,
  type WritePartition,
} from "../../../src/cluster/controller/controller_core.ts";
import {
  noLeader,
  type PartitionState,
  withInSync,
} from "../../../src/cluster/controller/partition_state.ts";
import { firstLeaderEpochOf } from "../../../src/broker/metadata/metadata.ts";
import type { TopicOptions } from "../../../src/broker/catalog/topic_options.ts";

const p = (leader: number, leaderEpoch: number, isr: number[], replicas = [1, 2, 3]): PartitionState => ({
  leader,
  leaderEpoch,
  isr,
  replicas,
});

function run(state: ControllerState, ...events: ControllerEvent[]) {
  const effects: WritePartition[] = [];
  for (const event of events) {
    const step = controllerStep(state, event);
    state = step.state;
    effects.push(...step.effects.filter((e): e is WritePartition => e.kind === "writePartition"));
  }
  return { state, effects };
}

t.test("a gone leader is replaced by the first live in-sync replica in replica order, one epoch on", (t) => {
  const decided = decidePartition(p(1, 4, [1, 3, 2]), new Set([2, 3]));
  t.same(decided?.state, p(2, 5, [3, 2]));
  t.match(decided?.reason, /leader 1 replaced by in-sync 2/);
  t.end();
});

t.test("a live leader keeps its epoch; only gone followers leave the in-sync set", (t) => {
  t.same(decidePartition(p(1, 4, [1, 2, 3]), new Set([1, 3]))?.state, p(1, 4, [1, 3]));
  t.equal(decidePartition(p(1, 4, [1, 3]), new Set([1, 3])), null, "nothing to change");
  t.equal(
    decidePartition(p(1, 4, [1]), new Set([1, 2, 3])),
    null,
    "the leader re-admits followers, not the controller",
  );
  t.end();
});

t.test("no unclean election: with every in-sync replica gone the partition waits, keeping its last leader", (t) => {
  const offline = decidePartition(p(1, 4, [1, 2]), new Set([3]));
  t.same(offline?.state, p(noLeader, 5, [1]), "replica 3 was not in sync, so it never leads");
  t.equal(decidePartition(p(noLeader, 5, [1]), new Set([3])), null, "it stays offline");
  t.same(decidePartition(p(noLeader, 5, [1]), new Set([1, 3]))?.state, p(1, 6, [1]), "its return elects it");
  t.end();
});

t.test("the controller writes once per partition, comparing the revision it decided on", (t) => {
  const key = "/s/partitions/1/1/0";
  const { state, effects } = run(
    initialControllerState(),
    { kind: "nodes", live: [1, 2, 3] },
    { kind: "partition", key, stored: { state: p(1, 0, [1, 2, 3]), modRevision: 10 } },
    { kind: "nodes", live: [2, 3] },
    { kind: "nodes", live: [3] },
  );
  t.equal(effects.length, 1, "the second change waits for the first write to be heard");
  t.same(effects[0], {
    kind: "writePartition",
    key,
    state: p(2, 1, [2, 3]),
    expectedModRevision: 10,
    reason: "leader 1 replaced by in-sync 2",
  });
  const heard = run(state, { kind: "partition", key, stored: { state: p(2, 1, [2, 3]), modRevision: 11 } });
  t.same(heard.effects.map((e) => [e.state, e.expectedModRevision]), [[p(3, 2, [3]), 11]]);
  const failed = run(heard.state, { kind: "writeFailed", key });
  t.same(failed.effects.map((e) => e.expectedModRevision), [11], "a failed write is decided again");
  t.end();
});

t.test("a partition deleted with its topic is forgotten; an unchanged event writes nothing", (t) => {
  const key = "/s/partitions/1/1/0";
  const { state, effects } = run(
    initialControllerState(),
    { kind: "nodes", live: [1, 2] },
    { kind: "partition", key, stored: { state: p(1, 0, [1, 2], [1, 2]), modRevision: 3 } },
    { kind: "partition", key, stored: null },
    { kind: "nodes", live: [2] },
  );
  t.same(effects, []);
  t.equal(state.partitions.size, 0);
  t.end();
});

t.test("over many seeded node changes every decided state keeps the invariants and epochs only grow", (t) => {
  let seed = 7;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  let state = controllerStep(initialControllerState(), { kind: "nodes", live: [1, 2, 3] }).state;
  const keys = ["a", "b", "c"];
  const stored = new Map(keys.map((k, i) => [k, { state: p(i + 1, 0, [1, 2, 3]), modRevision: i + 1 }]));
  for (const [key, s] of stored) state = controllerStep(state, { kind: "partition", key, stored: s }).state;
  let revision = 10;
  for (let round = 0; round < 500; round++) {
    const live = [1, 2, 3].filter(() => random() < 0.6);
    const step = controllerStep(state, { kind: "nodes", live });
    state = step.state;
    // Each write applies (the store would check the compare) and is heard back.
    while (step.effects.length > 0) {
      const effect = step.effects.shift()!;
      if (effect.kind !== "writePartition") throw new Error(`only state writes, got ${effect.kind}`);
      const before = stored.get(effect.key)!;
      t.equal(effect.expectedModRevision, before.modRevision);
      t.ok(effect.state.leaderEpoch >= before.state.leaderEpoch);
      if (effect.state.leader !== noLeader) t.ok(live.includes(effect.state.leader), "a leader is live");
      const written = { state: effect.state, modRevision: ++revision };
      stored.set(effect.key, written);
      const heard = controllerStep(state, { kind: "partition", key: effect.key, stored: written });
      state = heard.state;
      step.effects.push(...heard.effects);
    }
  }
  t.end();
});

t.test("topics the metadata names get partition states over the live nodes; dropped ones lose theirs", (t) => {
  const prefix = "/s/partitions/1/7/";
  let step = controllerStep(initialControllerState(3), { kind: "nodes", live: [1, 2] });
  step = controllerStep(step.state, {
    kind: "topics",
    topics: [{ keyPrefix: prefix, topicId: 7, partitions: 3, replicationFactor: null }],
  });
  t.equal(step.effects.length, 1);
  const create = step.effects[0]!;
  if (create.kind !== "createPartitions") throw new Error("expected a creation");
  t.equal(create.topicKey, prefix);
  t.same(create.states.map((s) => s.state.replicas), [[2, 1], [1, 2], [2, 1]], "3 asked, 2 live: 2 replicas");
  t.same(create.states.map((s) => s.state.leaderEpoch), [0, 0, 0]);
  // While its states are being written nothing more is decided for it; once heard, the placement ends.
  let state = controllerStep(step.state, { kind: "nodes", live: [1, 2, 3] }).state;
  t.ok(state.placing.has(prefix));
  for (const { partitionId, state: s } of create.states) {
    const heard = controllerStep(state, {
      kind: "partition",
      key: `${prefix}${partitionId}`,
      stored: { state: s, modRevision: 5 },
    });
    t.same(heard.effects, [], "a heard state of a live leader needs nothing");
    state = heard.state;
  }
  t.notOk(state.placing.has(prefix));
  const dropped = controllerStep(state, { kind: "topics", topics: [] });
  t.same(dropped.effects, [{ kind: "deletePartitions", topicKey: prefix }]);
  const again = controllerStep(dropped.state, { kind: "placementFailed", topicKey: prefix });
  t.same(again.effects, [{ kind: "deletePartitions", topicKey: prefix }], "a failed deletion is tried again");
  t.end();
});

t.test("a topic waits for live nodes before it is placed", (t) => {
  const prefix = "/s/partitions/1/1/";
  const step = controllerStep(initialControllerState(3), {
    kind: "topics",
    topics: [{ keyPrefix: prefix, topicId: 1, partitions: 1, replicationFactor: 1 }],
  });
  t.same(step.effects, []);
  const live = controllerStep(step.state, { kind: "nodes", live: [4] });
  t.same(live.effects.map((e) => e.kind), ["createPartitions"]);
  t.end();
});

t.test("a topic that names its replication factor waits for that many live nodes", (t) => {
  const prefix = "/s/partitions/1/1/";
  const topics = [{ keyPrefix: prefix, topicId: 1, partitions: 1, replicationFactor: 3 }];
  const two = run(initialControllerState(3), { kind: "nodes", live: [1, 2] }, { kind: "topics", topics });
  const placed = controllerStep(two.state, { kind: "nodes", live: [1, 2, 3] });
  const created = placed.effects.find((e) => e.kind === "createPartitions");
  t.ok(created !== undefined, "placed once three are live");
  t.same(created?.kind === "createPartitions" ? created.states[0]?.state.replicas.length : 0, 3);
  const defaulted = [{ ...topics[0]!, replicationFactor: null }];
  const now = controllerStep(two.state, { kind: "topics", topics: defaulted });
  t.same(now.effects.map((e) => e.kind), ["createPartitions"], "the default takes the two live");
  t.end();
});

t.test("a leader registered again since it was given its epoch loses it: another in-sync replica takes the next", (t) => {
  const key = "/s/partitions/1/1/0";
  const registered = (leaderRevision: number) => new Map([[1, leaderRevision], [2, 5], [3, 6]]);
  const state = { ...p(1, 3, [1, 2, 3]), leaderSession: 4 };
  const same = run(
    initialControllerState(3, 2),
    { kind: "nodes", live: [1, 2, 3], registered: registered(4) },
    { kind: "partition", key, stored: { state, modRevision: 10 } },
  );
  t.same(same.effects, [], "the process the epoch was given to: it keeps leading");
  const bounced = run(
    initialControllerState(3, 2),
    { kind: "nodes", live: [1, 2, 3], registered: registered(12) },
    { kind: "partition", key, stored: { state, modRevision: 10 } },
  );
  t.same(bounced.effects.map((e) => e.state), [{ ...p(2, 4, [1, 2, 3]), leaderSession: 5 }]);
  t.match(bounced.effects[0]?.reason, /leader 1 registered again: epoch 4 goes to 2/);
  const alone = decidePartition({ ...p(1, 3, [1]), leaderSession: 4 }, new Set([1, 2, 3]), {
    registered: registered(12),
  });
  t.same(
    alone?.state,
    { ...p(1, 4, [1]), leaderSession: 12 },
    "the only in-sync replica leads again, bound anew",
  );
  t.end();
});

t.test("replicas that leave an in-sync set below the minimum stay eligible, and lead when no in-sync one is live", (t) => {
  // Leader 1 gone; node 2 is the live one in sync: the set shrinks to it, below the minimum of 2,
  // so 1 and 3 (which left) hold every acknowledged record and stay eligible.
  const shrunk = decidePartition(p(1, 3, [1, 2, 3]), new Set([2]), { minInsyncReplicas: 2 })!.state;
  t.same(shrunk, { ...p(2, 4, [2]), eligible: [1, 3] });
  // Node 2 is gone too (its disk lost, say): eligible 3 comes back and leads, alone in sync.
  const fromEligible = decidePartition({ ...shrunk, isr: [], leader: noLeader }, new Set([3]), {
    minInsyncReplicas: 2,
  });
  t.same(fromEligible?.state, { ...p(3, 5, [3]), eligible: [1] });
  t.match(fromEligible?.reason, /replaced by eligible 3/);
  // Back at the minimum, acknowledgements go on without the eligible ones: they stop being so.
  t.same(withInSync({ ...p(3, 5, [3]), eligible: [1] }, [3, 2], 2), p(3, 5, [3, 2]));
  t.end();
});

t.test("a restored topic's first leaders take the epoch above its segments' epochs", (t) => {
  const step = controllerStep(
    controllerStep(initialControllerState(3), { kind: "nodes", live: [1, 2, 3] }).state,
    {
      kind: "topics",
      topics: [{
        keyPrefix: "/s/partitions/1/8/",
        topicId: 8,
        partitions: 2,
        replicationFactor: null,
        firstLeaderEpoch: 6,
      }],
    },
  );
  const create = step.effects[0]!;
  if (create.kind !== "createPartitions") throw new Error("expected a creation");
  t.same(create.states.map((s) => s.state.leaderEpoch), [6, 6]);
  const meta = {
    id: 8,
    name: "t",
    createdAtMs: 1,
    options: {} as TopicOptions,
    restoredFrom: {
      clusterId: "c",
      streamId: 1,
      topicId: 1,
      incarnations: [
        { partitionId: 0, createdRevision: "aa", purgeGeneration: 0, belowOffset: 10, firstLeaderEpoch: 6 },
        { partitionId: 1, createdRevision: "bb", purgeGeneration: 0, belowOffset: 10, firstLeaderEpoch: 2 },
        { partitionId: 2, createdRevision: "cc", purgeGeneration: 0 },
      ],
    },
  };
  t.equal(firstLeaderEpochOf(meta), 6, "the highest over its partitions");
  t.equal(firstLeaderEpochOf({ ...meta, restoredFrom: undefined }), 0, "a topic of its own starts at 0");
  t.end();
});
