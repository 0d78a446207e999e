import t from "tap";
import { SimCoordinatorStore } from "../../src/coordinator/sim_coordinator.ts";
import { ClusterKeys } from "../../src/cluster/node/cluster_keys.ts";
import { encodePartitionState } from "../../src/cluster/controller/partition_state.ts";
import { ReplaceAcks } from "../../src/cluster/replace_acks.ts";
import { encodeReplaceRecord } from "../../src/cluster/replace_record.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { virtualTime, waitFor } from "../helpers/wait_for.ts";
import { mergedMarker } from "../helpers/replace_commands.ts";

const keys = new ClusterKeys("/sim");
const address = { streamId: 1, topicId: 2, partitionId: 0 };
const label = "1/2/0";

async function setup() {
  const clock = new VirtualClock();
  const store = new SimCoordinatorStore({ clock, watchLagMs: 2 });
  const admin = store.client("admin");
  const put = (key: string, value: string) =>
    admin.txn({ compare: [], success: [{ kind: "put", key, value }] });
  await put(
    keys.partition(address),
    encodePartitionState({ leader: 1, leaderEpoch: 3, isr: [1, 2], replicas: [1, 2] }),
  );
  for (const [start, end] of [[0, 99], [100, 199]] as const) {
    await put(
      keys.replace(label, start),
      encodeReplaceRecord({ purgeGeneration: 0, leaderEpoch: 3, markers: [mergedMarker(start, end)] }),
    );
  }
  const acksOf = (nodeId: number) =>
    new ReplaceAcks({ coordinator: store.client(`node-${nodeId}`), keys, logger: silentLogger(), nodeId });
  const hearing = { deadlineMs: 1000, pace: virtualTime(clock, 5) };
  const count = async (prefix: string) => (await admin.range({ key: prefix, prefix: true })).kvs.length;
  return { admin, acksOf, hearing, count };
}

t.test("a replace is taken by all once every replica of the partition acked it", async (t) => {
  const { acksOf, hearing, count } = await setup();
  const [one, two] = [acksOf(1), acksOf(2)];
  t.equal(await one.takenByAll(label, 0), false, "no ack yet");
  one.ack(label, 0);
  await waitFor("node 1's ack", async () => (await count(keys.replaceAcksOf(label, 0))) === 1, hearing);
  t.equal(await one.takenByAll(label, 0), false, "one replica of two");
  two.ack(label, 100);
  two.ack(label, 0);
  await waitFor("node 2's acks", async () => (await count(keys.replaceAcks)) === 3, hearing);
  t.equal(await one.takenByAll(label, 0), true, "both replicas");
  t.equal(await one.takenByAll(label, 100), false, "acks are per replace");
  t.equal(await one.takenByAll("1/2/9", 0), false, "a partition with no state: never");
});

t.test("settling removes a replace and its acks; settling below removes those retention passed", async (t) => {
  const { acksOf, hearing, count } = await setup();
  const one = acksOf(1);
  one.ack(label, 0);
  one.ack(label, 100);
  await waitFor("the acks", async () => (await count(keys.replaceAcks)) === 2, hearing);
  await one.settle(label, 100);
  t.equal(await count(keys.replaces), 1);
  t.equal(await count(keys.replaceAcks), 1);
  t.equal(
    await one.settleBelow(label, 99),
    0,
    "a replace ending at 99 is not passed by a first offset of 99",
  );
  t.equal(await one.settleBelow(label, 100), 1);
  t.equal(await count(keys.replaces), 0);
  t.equal(await count(keys.replaceAcks), 0);
});
