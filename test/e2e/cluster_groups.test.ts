import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import t from "tap";
import { Kafka, logLevel } from "kafkajs";
import { apiKey } from "../../src/kafka/wire/frame_codec.ts";
import { kafkaRequest, KafkaWireClient } from "../helpers/kafka/kafka_wire.ts";
import { etcdUnavailableReason } from "../helpers/harnesses/etcd_harness.ts";
import { type GroupMember, startGroupMember } from "../helpers/group_members.ts";
import { type ClusterNodeProcess, startStrataCluster } from "../helpers/strata_cluster.ts";
import { coordinatorPort } from "../helpers/kafka/find_coordinator.ts";
import { coordinatorKeyType } from "../../src/kafka/apis/find_coordinator_codec.ts";
import { describePartition } from "../../scripts/lib/kafka_metadata.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

/** The waits on the cluster: real time, checked every 50 ms. */
const pace = realTime(50);
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
  await waitFor("every partition led with three in sync", async () => {
    const states = await Promise.all(
      Array.from({ length: partitions }, (_, p) => describePartition(cluster.bootstrap, topic, p)),
    );
    return states.every((s) => s !== null && s.leader > 0 && s.isr.length === 3);
  }, { deadlineMs: 20_000, pace });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  t.teardown(() => producer.disconnect());
  const produced: string[] = [];
  const produce = async (round: string, count: number) => {
    const values = Array.from({ length: count }, (_, i) => `${round}-${i}`);
    await producer.send({
      topic,
      acks: -1,
      messages: values.map((value, i) => ({ partition: i % partitions, value })),
    });
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
  const ends = async () =>
    (await admin.fetchTopicOffsets(topic)).map((o) => Number(o.high)).sort((a, b) => a - b);

  await produce("one", 600);
  start("a");
  start("b");
  await waitFor("two members sharing the partitions", () => balanced(2), { deadlineMs: 60_000, pace });
  await waitFor("every record consumed", () => produced.every((v) => consumed().has(v)), {
    deadlineMs: 60_000,
    pace,
  });
  await waitFor("the commits to reach every partition's end", async () => {
    const [c, e] = await Promise.all([committed(), ends()]);
    return c.join() === e.join();
  }, { deadlineMs: 30_000, pace });
  const before = await committed();

  const coordinator = await coordinatorNode(cluster.nodes);
  t.ok(coordinator !== null, `node ${coordinator?.id} coordinates the group`);
  start("c");
  // Killed while the group rebalances for its third member.
  await waitFor("the group to rebalance", async () => {
    const state = await groupState(coordinator!);
    return state === "PreparingRebalance" || state === "CompletingRebalance";
  }, { deadlineMs: 30_000, pace });
  await coordinator!.signal("SIGKILL");
  const completedMs = await waitFor("three members sharing the partitions", () => balanced(3), {
    deadlineMs: 90_000,
    pace,
  });
  t.pass(`the group completed ${completedMs} ms after the coordinator's node was killed`);
  const next = await coordinatorNode(cluster.nodes.filter((n) => n !== coordinator));
  t.ok(next !== null && next !== coordinator, `node ${next?.id} coordinates it now`);
  t.same(await committed(), before, "every committed offset intact on the new coordinator");

  await produce("two", 300);
  await waitFor("every record of the second round consumed", () => produced.every((v) => consumed().has(v)), {
    deadlineMs: 60_000,
    pace,
  });
  await waitFor("the commits to reach every partition's end again", async () => {
    const [c, e] = await Promise.all([committed(), ends()]);
    return c.join() === e.join();
  }, { deadlineMs: 30_000, pace });
  t.same(produced.filter((v) => !consumed().has(v)), [], "at least once: nothing produced was skipped");

  // Checkpoints: 1.5 MiB of commits to one group makes its coordinator write the live offsets again
  // and delete the segments below them; the followers delete theirs too, after their leader's start.
  const live = cluster.nodes.filter((n) => n.server !== null);
  const port = await coordinatorPort("bulk", live, coordinatorKeyType.group);
  const metadata = "m".repeat(4096);
  const wire = await KafkaWireClient.connect(port);
  t.teardown(() => wire.close());
  for (let round = 0; round < 64; round++) {
    wire.send(kafkaRequest(apiKey.offsetCommit, 2, round, (w) => {
      w.nullableString("bulk").int32(-1).nullableString("").int64(-1);
      w.array([topic], (x, name) =>
        x.nullableString(name).array(
          Array.from({ length: partitions }, (_, p) => p),
          (y, p) => y.int32(p).int64(round).nullableString(metadata),
        ));
    }));
    const answer = (await wire.next(30_000))!;
    answer.int32();
    const codes = answer.array((x) => (x.string(), x.array((y) => (y.int32(), y.int16()))));
    if (codes.flat().some((c) => c !== 0)) t.fail(`commit round ${round} refused: ${codes}`);
  }
  const partition = offsetsPartitionOf("bulk");
  const firsts = () => Promise.all(live.map((n) => firstSegmentOffset(n, partition)));
  await waitFor(
    "every live replica of the group's offsets partition to drop its first segment",
    async () => (await firsts()).every((first) => first > 0),
    { deadlineMs: 30_000, pace },
  );
  t.pass(`the replicas' oldest segments now start at ${await firsts()}`);
  const bulk = await admin.fetchOffsets({ groupId: "bulk", topics: [topic] });
  t.ok(bulk[0]!.partitions.every((p) => p.offset === "63"), "the latest commits survive the checkpoints");
});

/** The offsets partition of a group, as the coordinator hashes it (FNV-1a 32 of its id, modulo 4). */
function offsetsPartitionOf(groupId: string): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(groupId)) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash % 4;
}

/** The base offset of the oldest segment file of `__consumer_offsets`' partition on a node's disk. */
async function firstSegmentOffset(node: ClusterNodeProcess, partition: number): Promise<number> {
  const stream = await (await fetch(`${node.httpUrl}/streams/kafka`)).json();
  const topicId = stream.topics.find((t: { name: string }) => t.name === "__consumer_offsets").id;
  const dir = join(
    dirname(node.configPath),
    `data${node.id}`,
    "streams",
    String(stream.id),
    "topics",
    String(topicId),
    "partitions",
    String(partition),
  );
  const logs = readdirSync(dir).filter((f) => f.endsWith(".log")).sort();
  return Number(logs[0]!.slice(0, -4));
}

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
  await waitFor("one node to coordinate the group", async () => {
    for (const node of nodes) {
      if (node.server !== null && (await groupState(node)) !== null) found = node;
    }
    return found !== null;
  }, { deadlineMs: 30_000, pace });
  return found;
}
