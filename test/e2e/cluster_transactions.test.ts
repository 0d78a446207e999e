import t, { type Test } from "tap";
import { Kafka, logLevel } from "kafkajs";
import { describePartition } from "../../scripts/lib/kafka_metadata.ts";
import { coordinatorKeyType } from "../../src/kafka/apis/find_coordinator_codec.ts";
import { etcdUnavailableReason } from "../helpers/harnesses/etcd_harness.ts";
import { coordinatorPort } from "../helpers/kafka/find_coordinator.ts";
import { kcatValues } from "../helpers/kafka/isolated_reads.ts";
import { kcatUnavailable } from "../helpers/kafka/kcat.ts";
import { startStrataCluster } from "../helpers/strata_cluster.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

/** The waits on the cluster: real time, checked every 50 ms. */
const pace = realTime(50);
// Transactions on a 3-node cluster: a transaction's partitions are led by different nodes, so its
// coordinator writes the markers of the partitions it leads itself and sends the others to their
// leaders (NodeTxnMarkers). read_committed readers of every partition see the committed records
// and none of the aborted ones, also when the coordinator's node is killed as a commit is answered.
const skip = etcdUnavailableReason() ?? kcatUnavailable() ?? false;
const partitions = 3;

/** A 3-node cluster with `topic` of three partitions, each replicated three times, and a client. */
async function clusterWithTopic(t: Test, portBase: number, topic: string) {
  const cluster = await startStrataCluster(t, { portBase });
  const kafka = new Kafka({
    clientId: `strata-cluster-${topic}`,
    brokers: cluster.bootstrap.split(","),
    logLevel: logLevel.NOTHING,
    requestTimeout: 10_000,
    retry: { retries: 20, initialRetryTime: 100, maxRetryTime: 1000 },
  });
  const admin = kafka.admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions, replicationFactor: 3 }] });
  const leaders = new Set<number>();
  await waitFor("every partition led with three in sync", async () => {
    const states = await Promise.all(
      Array.from({ length: partitions }, (_, p) => describePartition(cluster.bootstrap, topic, p)),
    );
    leaders.clear();
    for (const s of states) if (s !== null) leaders.add(s.leader);
    return states.every((s) => s !== null && s.leader > 0 && s.isr.length === 3);
  }, { deadlineMs: 20_000, pace });
  return { cluster, kafka, leaders };
}

/** One record on every partition, `round-p`, in one transaction of `producer`. */
const onEveryPartition = (topic: string, round: string) => ({
  topic,
  acks: -1,
  messages: Array.from({ length: partitions }, (_, p) => ({ partition: p, value: `${round}-${p}` })),
});

t.test("a transaction across partitions led by three nodes commits and aborts on each", {
  skip,
  timeout: 300_000,
}, async (t) => {
  const topic = "txo";
  const { cluster, kafka, leaders } = await clusterWithTopic(t, 32_500, topic);
  t.ok(leaders.size >= 2, `the partitions are led by ${leaders.size} nodes`);
  const producer = kafka.producer({
    transactionalId: "cluster-tx",
    maxInFlightRequests: 1,
    idempotent: true,
  });
  await producer.connect();
  t.teardown(() => producer.disconnect());
  const run = async (round: string, commit: boolean) => {
    const txn = await producer.transaction();
    await txn.send(onEveryPartition(topic, round));
    await (commit ? txn.commit() : txn.abort());
  };
  await run("first", true);
  await run("aborted", false);
  await run("last", true);
  for (let p = 0; p < partitions; p++) {
    await waitFor(`the last transaction's records on partition ${p}`, async () => {
      return (await kcatValues(cluster.bootstrap, topic, "read_committed", p)).includes(`last-${p}`);
    }, { deadlineMs: 30_000, pace });
    t.same(
      await kcatValues(cluster.bootstrap, topic, "read_committed", p),
      [`first-${p}`, `last-${p}`],
      `partition ${p}`,
    );
  }
});

t.test(
  "the coordinator's node SIGKILLed as the commit is answered: the new coordinator completes it everywhere",
  {
    skip,
    timeout: 300_000,
  },
  async (t) => {
    const topic = "txk";
    const { cluster, kafka } = await clusterWithTopic(t, 33_500, topic);
    const producer = kafka.producer({
      transactionalId: "killed-coordinator",
      maxInFlightRequests: 1,
      idempotent: true,
    });
    await producer.connect();
    const txn = await producer.transaction();
    await txn.send(onEveryPartition(topic, "all"));
    const port = await coordinatorPort("killed-coordinator", cluster.nodes, coordinatorKeyType.transaction);
    const coordinator = cluster.nodes.find((n) => n.kafka.endsWith(`:${port}`))!;
    await txn.commit();
    await coordinator.signal("SIGKILL");
    await producer.disconnect().catch(() => {});
    const live = cluster.nodes.filter((n) => n !== coordinator).map((n) => n.kafka).join(",");
    for (let p = 0; p < partitions; p++) {
      await waitFor(`the committed record on partition ${p}`, async () => {
        return (await kcatValues(live, topic, "read_committed", p)).includes(`all-${p}`);
      }, { deadlineMs: 60_000, pace, throwMeansNotYet: true });
    }
    t.pass(`node ${coordinator.id}, the coordinator, was killed; every partition holds the commit`);
  },
);
