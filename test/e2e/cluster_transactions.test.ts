import t, { type Test } from "tap";
import { Kafka, logLevel } from "kafkajs";
import { describePartition } from "../../scripts/lib/kafka_metadata.ts";
import { coordinatorKeyType } from "../../src/kafka/apis/find_coordinator_codec.ts";
import { etcdUnavailableReason } from "../helpers/harnesses/etcd_harness.ts";
import { coordinatorPort } from "../helpers/kafka/find_coordinator.ts";
import { kcatValues } from "../helpers/kafka/isolated_reads.ts";
import { kcatUnavailable } from "../helpers/kafka/kcat.ts";
import { type ClusterOptions, startStrataCluster } from "../helpers/strata_cluster.ts";
import { HoldingProxy } from "../helpers/kafka/holding_proxy.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

/** The waits on the cluster: real time, checked every 50 ms. */
const pace = realTime(50);
// Transactions on a 3-node cluster: a transaction's partitions are led by different nodes, so its
// coordinator writes the markers of the partitions it leads itself and sends the others to their
// leaders (NodeTxnMarkers). read_committed readers of every partition see the committed records
// and none of the aborted ones, also when the coordinator's node is killed after a commit was
// answered and before every marker was written.
const skip = etcdUnavailableReason() ?? kcatUnavailable() ?? false;
const partitions = 3;

/** A 3-node cluster with `topic` of three partitions, each replicated three times, and a client. */
async function clusterWithTopic(
  t: Test,
  portBase: number,
  topic: string,
  options: Partial<ClusterOptions> = {},
) {
  const cluster = await startStrataCluster(t, { ...options, portBase });
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
  /** Each partition's leader, by partition. */
  const leaderOf: number[] = [];
  await waitFor("every partition led with three in sync", async () => {
    const states = await Promise.all(
      Array.from({ length: partitions }, (_, p) => describePartition(cluster.bootstrap, topic, p)),
    );
    leaderOf.splice(0, leaderOf.length, ...states.map((s) => s?.leader ?? -1));
    return states.every((s) => s !== null && s.leader > 0 && s.isr.length === 3);
  }, { deadlineMs: 20_000, pace });
  return { cluster, kafka, leaders: new Set(leaderOf), leaderOf };
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
  "the coordinator's node SIGKILLed between EndTxn and the markers: a new coordinator completes the commit everywhere",
  { skip, timeout: 300_000 },
  async (t) => {
    const topic = "txk";
    const portBase = 33_500;
    // Each node advertises a proxy before its Kafka listener: holding one node's proxy keeps the
    // coordinator's markers from reaching the partition that node leads.
    const proxies = await Promise.all([1, 2, 3].map(() => HoldingProxy.start()));
    t.teardown(() => Promise.all(proxies.map((p) => p.close())));
    const proxyOf = (id: number) => proxies[id - 1]!;
    proxies.forEach((p, i) => (p.target = { host: "127.0.0.1", port: portBase + 30 + i + 1 }));
    const { cluster, kafka, leaderOf } = await clusterWithTopic(t, portBase, topic, {
      advertisedKafka: (id) => `127.0.0.1:${proxyOf(id).port}`,
    });
    const transactionalId = "killed-coordinator";
    const producer = kafka.producer({ transactionalId, maxInFlightRequests: 1, idempotent: true });
    await producer.connect();
    const txn = await producer.transaction();
    await txn.send(onEveryPartition(topic, "all"));
    const port = await coordinatorPort(transactionalId, cluster.nodes, coordinatorKeyType.transaction);
    const coordinator = cluster.node(proxies.findIndex((p) => p.port === port) + 1);
    const held = leaderOf.find((leader) => leader !== coordinator.id);
    if (held === undefined) {
      throw new Error(`node ${coordinator.id} leads every partition: no marker can be held`);
    }
    proxyOf(held).hold();
    await txn.commit();
    const view = async (node: typeof coordinator) => {
      const answer = await fetch(`${node.httpUrl}/transactions/${transactionalId}`);
      return { status: answer.status, state: (await answer.json()).state as string | undefined };
    };
    t.same(
      await view(coordinator),
      { status: 200, state: "PrepareCommit" },
      `the commit is answered, and node ${held}'s partition has no marker yet`,
    );
    await coordinator.signal("SIGKILL");
    proxyOf(held).release();
    await producer.disconnect().catch(() => {});
    const survivors = cluster.nodes.filter((n) => n !== coordinator);
    const live = survivors.map((n) => n.kafka).join(",");
    for (let p = 0; p < partitions; p++) {
      await waitFor(`the committed record on partition ${p}`, async () => {
        return (await kcatValues(live, topic, "read_committed", p)).includes(`all-${p}`);
      }, { deadlineMs: 60_000, pace, throwMeansNotYet: true });
    }
    await waitFor("the new coordinator to hold the transaction complete", async () => {
      const views = await Promise.all(survivors.map(view));
      return views.some((v) => v.status === 200 && v.state === "CompleteCommit");
    }, { deadlineMs: 30_000, pace, throwMeansNotYet: true });
    t.pass(`node ${coordinator.id}, the coordinator, was killed; every partition holds the commit`);
  },
);
