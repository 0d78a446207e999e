import { parseArgs } from "node:util";
import { Kafka, logLevel } from "kafkajs";
import { clusterPolling, etcdInstalled, type LocalCluster, startLocalCluster } from "./lib/local_cluster.ts";
import { waitFor } from "../test/helpers/wait_for.ts";

/**
 * A 3-node cluster on a 3-member etcd, on loopback: produce latency with acks=all against acks=1 in
 * the same run, and failover time over repeated leader kills.
 *
 *   deno task bench:cluster [--records 2000] [--kills 10] [--quick] [--json PATH]
 *
 * Latency: one producer (kafkajs) sends `--records` single 1 KiB records one after the other to one
 * partition of replication factor 3, alternating acks=1 and acks=all in rounds of 100, and times
 * each send; fsync "interval". Failover: `--kills` times, the partition's leader is killed with
 * SIGKILL and the time is taken until another node's Metadata names a live new leader and a produce
 * with acks=all to it is acknowledged; the killed node is restarted and the next kill waits for it
 * to be back in sync. The leader's tick lateness (its /health) is read after the latency phase.
 * Targets: acks=all p99 at most 2 × acks=1 p99; failover median at most lease_ttl + 1 s.
 */

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    records: { type: "string" },
    kills: { type: "string" },
    quick: { type: "boolean", default: false },
    json: { type: "string" },
  },
});
const quick = args.quick!;
const records = Number(args.records ?? (quick ? 200 : 2000));
const kills = Number(args.kills ?? (quick ? 2 : 10));
const leaseTtlMs = 2000;
const portBase = 27_500;
const topic = "bench";

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
}

const round = (ms: number) => Math.round(ms * 100) / 100;

async function describe(kafka: Kafka) {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    const p = metadata.topics[0]!.partitions[0]!;
    return { leader: p.leader, isr: p.isr };
  } finally {
    await admin.disconnect();
  }
}

async function latencies(kafka: Kafka): Promise<{ acks1: number[]; acksAll: number[] }> {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const value = new Uint8Array(1024).fill(7);
  const result = { acks1: [] as number[], acksAll: [] as number[] };
  try {
    for (let sent = 0; sent < records;) {
      for (const acks of [1, -1]) {
        for (let i = 0; i < 100 && sent < records; i++, sent++) {
          const startedMs = performance.now();
          await producer.send({ topic, acks, messages: [{ partition: 0, value: Buffer.from(value) }] });
          (acks === 1 ? result.acks1 : result.acksAll).push(performance.now() - startedMs);
        }
      }
    }
  } finally {
    await producer.disconnect();
  }
  return result;
}

async function failover(cluster: LocalCluster, kafka: Kafka): Promise<number> {
  const before = await describe(kafka);
  const victim = cluster.node(before.leader);
  const others = cluster.nodes.filter((n) => n !== victim);
  const client = new Kafka({
    clientId: "bench-failover",
    brokers: others.map((n) => n.kafka),
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
  });
  const producer = client.producer({ allowAutoTopicCreation: false, retry: { retries: 0 } });
  await producer.connect();
  const killedAtMs = performance.now();
  await cluster.kill(victim);
  await waitFor("a new leader's acknowledgement", async () => {
    const now = await describe(client);
    if (now.leader === before.leader || now.leader < 0) return false;
    await producer.send({ topic, acks: -1, timeout: 2000, messages: [{ partition: 0, value: "failover" }] });
    return true;
  }, { deadlineMs: 6 * leaseTtlMs, ...clusterPolling });
  const elapsedMs = performance.now() - killedAtMs;
  await producer.disconnect();
  await cluster.restart(victim);
  await waitFor("the restarted node back in sync", async () => (await describe(kafka)).isr.length === 3, {
    deadlineMs: 30_000,
    ...clusterPolling,
  });
  return elapsedMs;
}

async function main(): Promise<number> {
  if (!(await etcdInstalled())) {
    console.error("bench:cluster needs etcd: apt-get install etcd-server");
    return 2;
  }
  const dir = await Deno.makeTempDir({ prefix: "strata-bench-cluster-" });
  const cluster = await startLocalCluster({
    portBase,
    dir,
    nodes: 3,
    leaseTtlMs,
    secret: "bench-cluster-secret-value",
  });
  try {
    const kafka = new Kafka({
      clientId: "bench-cluster",
      brokers: cluster.bootstrap.split(","),
      logLevel: logLevel.NOTHING,
      retry: { retries: 10, initialRetryTime: 50, maxRetryTime: 500 },
    });
    const admin = kafka.admin();
    await admin.connect();
    // A node that listens may not be registered yet: the replication factor counts live nodes.
    await waitFor("every node registered", async () => (await admin.describeCluster()).brokers.length === 3, {
      deadlineMs: 20_000,
      ...clusterPolling,
    });
    await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 3 }] });
    await admin.disconnect();
    await waitFor("three replicas in sync", async () => (await describe(kafka)).isr.length === 3, {
      deadlineMs: 20_000,
      ...clusterPolling,
    });
    const { acks1, acksAll } = await latencies(kafka);
    const leaderId = (await describe(kafka)).leader;
    const leader = cluster.node(leaderId);
    const health = await (await fetch(`http://${leader.http}/health`)).json();
    const failovers: number[] = [];
    for (let k = 0; k < kills; k++) failovers.push(await failover(cluster, kafka));
    const report = {
      records,
      lease_ttl_ms: leaseTtlMs,
      acks_1: { p50_ms: round(percentile(acks1, 0.5)), p99_ms: round(percentile(acks1, 0.99)) },
      acks_all: { p50_ms: round(percentile(acksAll, 0.5)), p99_ms: round(percentile(acksAll, 0.99)) },
      failover_ms: {
        kills,
        min: round(Math.min(...failovers)),
        median: round(percentile(failovers, 0.5)),
        max: round(Math.max(...failovers)),
      },
      leader_tick_lateness_ms: health.shards?.[0]?.tick_lateness_ms ?? null,
    };
    const targets = {
      acks_all_p99_within_2x_acks_1: report.acks_all.p99_ms <= 2 * report.acks_1.p99_ms,
      failover_median_within_lease_plus_1s: report.failover_ms.median <= leaseTtlMs + 1000,
    };
    console.log(JSON.stringify({ ...report, targets }, null, 2));
    if (args.json) {
      await Deno.writeTextFile(args.json, JSON.stringify({ ...report, targets }, null, 2) + "\n");
    }
    return 0;
  } finally {
    await cluster.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

Deno.exit(await main());
