import t from "tap";
import { Kafka, logLevel } from "kafkajs";
import { etcdUnavailableReason } from "../helpers/etcd_harness.ts";
import { type GroupMember, startGroupMember } from "../helpers/group_members.ts";
import { type ClusterNodeProcess, describePartition, startStrataCluster, until } from "../helpers/strata_cluster.ts";

// A consumer group on a 3-node cluster: its coordinator is the leader of its partition of
// __consumer_offsets (replicated as any partition). The coordinator's node is killed while the
// group rebalances; the group completes on the new coordinator with every committed offset intact.
const skip = etcdUnavailableReason() ?? false;
const partitions = 6;
const topic = "orders";
const group = "cg";

t.test("the coordinator's node killed during a rebalance: the group completes on the new one", {
  skip,
  timeout: 300_000,
}, async (t) => {
  const cluster = await startStrataCluster(t, {
    portBase: 29_000,
    groups: [`offsets_topic_partitions = 4`, `offsets_checkpoint_bytes = "64 KiB"`],
  });
  const kafka = new Kafka({
    clientId: "strata-cluster-groups",
    brokers: cluster.bootstrap.split(","),
    logLevel: logLevel.NOTHING,
    requestTimeout: 5000,
    retry: { retries: 20, initialRetryTime: 100, maxRetryTime: 1000 },
  });
  const admin = kafka.admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions, replicationFactor: 3 }] });
  await until("every partition led with three in sync", async () => {
    const states = await Promise.all(
      Array.from({ length: partitions }, (_, p) => describePartition(cluster.bootstrap, topic, p)),
    );
    return states.every((s) => s !== null && s.leader > 0 && s.isr.length === 3);
  }, 20_000);
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  t.teardown(() => producer.disconnect());
  const produced: string[] = [];
  const produce = async (round: string, count: number) => {
    const values = Array.from({ length: count }, (_, i) => `${round}-${i}`);
    await producer.send({ topic, acks: -1, messages: values.map((value, i) => ({ partition: i % partitions, value })) });
    produced.push(...values);
  };

  const members: GroupMember[] = [];
  const start = (name: string) => {
    const member = startGroupMember(name, cluster.bootstrap, group, topic, 6000);
    members.push(member);
    t.teardown(() => member.stop("SIGKILL"));
    return member;
  };
  const consumed = () => new Set(members.flatMap((m) => m.records.map((r) => r.value)));
  const balanced = (count: number) => {
    const shares = members.filter((m) => !m.exited).map((m) => m.assigned);
    const all = shares.flat().sort((a, b) => a - b);
    return shares.length === count && all.length === partitions && all.every((p, i) => p === i) &&
      shares.every((s) => s.length > 0);
  };
  const committed = async () => {
    const offsets = await admin.fetchOffsets({ groupId: group, topics: [topic] });
    return offsets[0]!.partitions.map((p) => Number(p.offset)).sort((a, b) => a - b);
  };
  const ends = async () => (await admin.fetchTopicOffsets(topic)).map((o) => Number(o.high)).sort((a, b) => a - b);

  await produce("one", 600);
  start("a");
  start("b");
  await until("two members sharing the partitions", () => balanced(2), 60_000);
  await until("every record consumed", () => produced.every((v) => consumed().has(v)), 60_000);
  await until("the commits to reach every partition's end", async () => {
    const [c, e] = await Promise.all([committed(), ends()]);
    return c.join() === e.join();
  }, 30_000);
  const before = await committed();

  const coordinator = await coordinatorNode(cluster.nodes);
  t.ok(coordinator !== null, `node ${coordinator?.id} coordinates the group`);
  start("c");
  // Killed while the group rebalances for its third member.
  await until("the group to rebalance", async () => {
    const state = await groupState(coordinator!);
    return state === "PreparingRebalance" || state === "CompletingRebalance";
  }, 30_000);
  await coordinator!.signal("SIGKILL");
  const completedMs = await until("three members sharing the partitions", () => balanced(3), 90_000);
  t.pass(`the group completed ${completedMs} ms after the coordinator's node was killed`);
  const next = await coordinatorNode(cluster.nodes.filter((n) => n !== coordinator));
  t.ok(next !== null && next !== coordinator, `node ${next?.id} coordinates it now`);
  t.same(await committed(), before, "every committed offset intact on the new coordinator");

  await produce("two", 300);
  await until("every record of the second round consumed", () => produced.every((v) => consumed().has(v)), 60_000);
  await until("the commits to reach every partition's end again", async () => {
    const [c, e] = await Promise.all([committed(), ends()]);
    return c.join() === e.join();
  }, 30_000);
  t.same(produced.filter((v) => !consumed().has(v)), [], "at least once: nothing produced was skipped");
});

async function groupState(node: ClusterNodeProcess): Promise<string | null> {
  try {
    const response = await fetch(`${node.httpUrl}/groups/${group}`);
    return response.status === 200 ? (await response.json()).state : null;
  } catch {
    return null;
  }
}

/** The node whose HTTP API describes the group: its coordinator. */
async function coordinatorNode(nodes: ClusterNodeProcess[]): Promise<ClusterNodeProcess | null> {
  let found: ClusterNodeProcess | null = null;
  await until("one node to coordinate the group", async () => {
    for (const node of nodes) {
      if (node.server !== null && (await groupState(node)) !== null) found = node;
    }
    return found !== null;
  }, 30_000);
  return found;
}
