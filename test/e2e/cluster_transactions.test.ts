import t from "tap";
import { Kafka, logLevel } from "kafkajs";
import { describePartition } from "../../scripts/lib/kafka_metadata.ts";
import { etcdUnavailableReason } from "../helpers/harnesses/etcd_harness.ts";
import { kcat, kcatUnavailable } from "../helpers/kafka/kcat.ts";
import { startStrataCluster } from "../helpers/strata_cluster.ts";
import { coordinatorPort } from "../helpers/kafka/find_coordinator.ts";
import { coordinatorKeyType } from "../../src/kafka/apis/find_coordinator_codec.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

/** The waits on the cluster: real time, checked every 50 ms. */
const pace = realTime(50);
// Transactions on a 3-node cluster: a transaction's partitions are led by different nodes, so its
// coordinator writes the markers of the partitions it leads itself and sends the others to their
// leaders (NodeTxnMarkers). read_committed readers of every partition see the committed records
// and none of the aborted ones.
const skip = etcdUnavailableReason() ?? kcatUnavailable() ?? false;
const partitions = 3;
const topic = "txo";

/** A partition's values as librdkafka reads them with read_committed, to the end it may read. */
async function committedValues(bootstrap: string, partition: number, topic = "txo"): Promise<string[]> {
  const read = await kcat([
    "-b",
    bootstrap,
    "-C",
    "-t",
    topic,
    "-p",
    String(partition),
    "-o",
    "beginning",
    "-e",
    "-q",
    "-f",
    "%s\\n",
    "-X",
    "isolation.level=read_committed",
  ]);
  if (read.code !== 0) throw new Error(`Cannot read ${topic}/${partition}: ${read.stderr}`);
  return read.stdout.split("\n").filter((line) => line !== "");
}

t.test("a transaction across partitions led by three nodes commits and aborts on each", {
  skip,
  timeout: 300_000,
}, async (t) => {
  const cluster = await startStrataCluster(t, { portBase: 32_500 });
  const kafka = new Kafka({
    clientId: "strata-cluster-txn",
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
    await txn.send({
      topic,
      acks: -1,
      messages: Array.from({ length: partitions }, (_, p) => ({ partition: p, value: `${round}-${p}` })),
    });
    await (commit ? txn.commit() : txn.abort());
  };
  await run("first", true);
  await run("aborted", false);
  await run("last", true);
  for (let p = 0; p < partitions; p++) {
    await waitFor(`the last transaction's records on partition ${p}`, async () => {
      return (await committedValues(cluster.bootstrap, p)).includes(`last-${p}`);
    }, { deadlineMs: 30_000, pace });
    t.same(await committedValues(cluster.bootstrap, p), [`first-${p}`, `last-${p}`], `partition ${p}`);
  }
});

t.test(
  "the coordinator's node SIGKILLed as the commit is answered: the new coordinator completes it everywhere",
  {
    skip,
    timeout: 300_000,
  },
  async (t) => {
    const cluster = await startStrataCluster(t, { portBase: 33_500 });
    const kafka = new Kafka({
      clientId: "strata-cluster-txn-kill",
      brokers: cluster.bootstrap.split(","),
      logLevel: logLevel.NOTHING,
      requestTimeout: 10_000,
      retry: { retries: 20, initialRetryTime: 100, maxRetryTime: 1000 },
    });
    const admin = kafka.admin();
    await admin.connect();
    t.teardown(() => admin.disconnect());
    const killed = "txk";
    await admin.createTopics({
      topics: [{ topic: killed, numPartitions: partitions, replicationFactor: 3 }],
    });
    await waitFor("every partition led with three in sync", async () => {
      const states = await Promise.all(
        Array.from({ length: partitions }, (_, p) => describePartition(cluster.bootstrap, killed, p)),
      );
      return states.every((s) => s !== null && s.leader > 0 && s.isr.length === 3);
    }, { deadlineMs: 20_000, pace });
    const producer = kafka.producer({
      transactionalId: "killed-coordinator",
      maxInFlightRequests: 1,
      idempotent: true,
    });
    await producer.connect();
    const txn = await producer.transaction();
    await txn.send({
      topic: killed,
      acks: -1,
      messages: Array.from({ length: partitions }, (_, p) => ({ partition: p, value: `all-${p}` })),
    });
    const port = await coordinatorPort("killed-coordinator", cluster.nodes, coordinatorKeyType.transaction);
    const coordinator = cluster.nodes.find((n) => n.kafka.endsWith(`:${port}`))!;
    await txn.commit();
    await coordinator.signal("SIGKILL");
    await producer.disconnect().catch(() => {});
    const live = cluster.nodes.filter((n) => n !== coordinator).map((n) => n.kafka).join(",");
    for (let p = 0; p < partitions; p++) {
      await waitFor(`the committed record on partition ${p}`, async () => {
        return (await committedValues(live, p, killed)).includes(`all-${p}`);
      }, { deadlineMs: 60_000, pace, throwMeansNotYet: true });
    }
    t.pass(`node ${coordinator.id}, the coordinator, was killed; every partition holds the commit`);
  },
);
