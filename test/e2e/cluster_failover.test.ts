import t from "tap";
import { Kafka, logLevel } from "kafkajs";
import { etcdUnavailableReason } from "../helpers/harnesses/etcd_harness.ts";
import { kcat, kcatUnavailable, spawnKcatProducer } from "../helpers/kafka/kcat.ts";
import { describePartition } from "../../scripts/lib/kafka_metadata.ts";
import { readPartition, startStrataCluster } from "../helpers/strata_cluster.ts";
import { StrataClient } from "../../src/client/strata_client.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

/** The waits on the cluster: real time, checked every 50 ms. */
const pace = realTime(50);
const skip = etcdUnavailableReason() ?? kcatUnavailable() ?? false;
const leaseTtlMs = 2000;

t.test(
  "a 3-node cluster on etcd: acks=all through a leader's SIGKILL",
  { skip, timeout: 240_000 },
  async (t) => {
    const cluster = await startStrataCluster(t, { portBase: 21_000 });
    const kafka = new Kafka({
      clientId: "strata-failover",
      brokers: cluster.bootstrap.split(","),
      logLevel: logLevel.NOTHING,
      requestTimeout: 5000,
      retry: { retries: 12, initialRetryTime: 100, maxRetryTime: 1000 },
    });
    const admin = kafka.admin();
    await admin.connect();
    t.teardown(() => admin.disconnect());
    t.equal(
      await admin.createTopics({ topics: [{ topic: "orders", numPartitions: 1, replicationFactor: 3 }] }),
      true,
    );
    const placed = await waitFor("the partition to be led with three in sync", async () => {
      const p = await describePartition(cluster.bootstrap, "orders", 0);
      return p !== null && p.leader > 0 && p.isr.length === 3;
    }, { deadlineMs: 10_000, pace });
    t.ok(placed < 10_000, `placed ${placed} ms after creation`);

    // What the cluster cannot serve is refused at creation, by the error its API has for it.
    const tooMany = await admin.createTopics({
      topics: [{ topic: "wide", numPartitions: 1, replicationFactor: 5 }],
    })
      .catch((e) => e);
    t.match(String(tooMany?.errors?.[0]?.type ?? tooMany), /INVALID_REPLICATION_FACTOR/);
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    t.teardown(() => producer.disconnect());
    const acked: string[] = [];
    let failed = 0;
    const send = async (value: string) => {
      try {
        await producer.send({
          topic: "orders",
          acks: -1,
          timeout: 5000,
          messages: [{ partition: 0, value }],
        });
        acked.push(value);
        return true;
      } catch {
        failed++;
        return false;
      }
    };
    for (let i = 0; i < 100; i++) await send(`before-${i}`);
    t.equal(acked.length, 100, "every record before the kill acknowledged");

    // kcat (librdkafka) produces with acks=all and idempotence all along, through the kill: a line
    // every 20 ms. The retries of batches whose answers the kill lost are answered by the new leader,
    // which holds the batches the old one replicated to it.
    const kcatProducer = spawnKcatProducer([
      "-b",
      cluster.bootstrap,
      "-t",
      "orders",
      "-p",
      "0",
      "-X",
      "enable.idempotence=true",
      "-X",
      "request.required.acks=-1",
      "-X",
      "message.timeout.ms=30000",
    ]);
    const kcatLines: string[] = [];
    let kcatWriting = true;
    const kcatWriter = (async () => {
      while (kcatWriting) {
        kcatLines.push(`kcat-live-${kcatLines.length}`);
        kcatProducer.write(kcatLines.at(-1)!);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    await waitFor("kcat to write 20 lines", () => kcatLines.length >= 20, { deadlineMs: 10_000, pace });

    const before = (await describePartition(cluster.bootstrap, "orders", 0))!;
    const killedAtMs = Date.now();
    const kcatLinesAtKill = kcatLines.length;
    await cluster.node(before.leader).signal("SIGKILL");
    const others = cluster.nodes.filter((n) => n.id !== before.leader).map((n) => n.kafka).join(",");
    // Beside the producer: when another node's metadata names a live new leader, it serves.
    let kcatLinesAtServed = -1;
    const servedAfterMs = waitFor("a new leader in the metadata", async () => {
      const p = await describePartition(others, "orders", 0);
      return p !== null && p.leader > 0 && p.leader !== before.leader;
    }, { deadlineMs: 4 * leaseTtlMs, pace }).then(() => {
      kcatLinesAtServed = kcatLines.length;
      return Date.now() - killedAtMs;
    });
    let firstAckMs = -1;
    for (let i = 0; i < 200; i++) {
      if (await send(`after-${i}`) && firstAckMs < 0) firstAckMs = Date.now() - killedAtMs;
    }
    const servedMs = await servedAfterMs;
    const kcatLinesAfterSends = kcatLines.length;
    await waitFor("kcat to write 20 lines more", () => kcatLines.length >= kcatLinesAfterSends + 20, {
      deadlineMs: 10_000,
      pace,
    });
    kcatWriting = false;
    await kcatWriter;
    const kcatEnded = await kcatProducer.end();
    t.equal(kcatEnded.code, 0, `kcat delivered every line with acks=all: ${kcatEnded.stderr.slice(-2000)}`);
    const duringOutage = kcatLinesAtServed - kcatLinesAtKill;
    t.ok(duringOutage > 0, `kcat wrote ${duringOutage} lines while no new leader served`);
    t.comment(
      `kcat wrote ${kcatLinesAtKill} lines before the kill, ${duringOutage} during the failover, ${
        kcatLines.length - kcatLinesAtServed
      } after`,
    );
    const after = (await describePartition(others, "orders", 0))!;
    t.not(after.leader, before.leader, `node ${after.leader} leads now`);
    t.ok(
      servedMs <= leaseTtlMs + 2000,
      `a new leader served ${servedMs} ms after the kill (lease_ttl + 2 s at most)`,
    );
    // kafkajs's own retry backoff comes on top of the failover.
    t.ok(firstAckMs > 0, `kafkajs's first acknowledgement from it came ${firstAckMs} ms after the kill`);
    t.notOk(after.isr.includes(before.leader), "the killed node left the in-sync set");

    const records = await readPartition(others, "orders");
    const offsets = [...records.keys()].sort((a, b) => a - b);
    t.same(offsets, offsets.map((_, i) => i), "offsets dense from 0");
    const values = new Set(records.values());
    t.same(acked.filter((v) => !values.has(v)), [], "every acknowledged record is read back");
    t.same(kcatLines.filter((v) => !values.has(v)), [], "every line kcat delivered is read back");
    t.comment(
      `${acked.length} acknowledged, ${failed} failed, ${records.size} read; failover ${firstAckMs} ms`,
    );

    // kcat (librdkafka) produces with acks=all to the new leader too.
    const lines = Array.from({ length: 50 }, (_, i) => `kcat-batch-${i}`).join("\n") + "\n";
    const produced = await kcat([
      "-P",
      "-b",
      others,
      "-t",
      "orders",
      "-p",
      "0",
      "-X",
      "request.required.acks=-1",
    ], lines);
    t.equal(produced.code, 0, produced.stderr);
    const withKcat = await readPartition(others, "orders");
    t.equal([...withKcat.values()].filter((v) => v.startsWith("kcat-batch-")).length, 50);

    // The killed node comes back, catches up and rejoins the in-sync set.
    await cluster.node(before.leader).restart();
    const rejoined = await waitFor("the restarted node to rejoin the in-sync set", async () => {
      const p = await describePartition(cluster.bootstrap, "orders", 0);
      return p !== null && p.isr.includes(before.leader);
    }, { deadlineMs: 20_000, pace });
    t.ok(rejoined < 20_000, `rejoined ${rejoined} ms after its restart`);

    // Over HTTP a node that does not lead the partition redirects to the one that does, and the
    // TypeScript client follows (the method and body go along).
    const leaderNow = (await describePartition(cluster.bootstrap, "orders", 0))!.leader;
    // The cluster's gauges, on the leader's /metrics.
    const metrics = await (await fetch(`${cluster.node(leaderNow).httpUrl}/metrics`)).text();
    for (
      const name of [
        "strata_cluster_partitions_led 1",
        "strata_cluster_under_replicated_partitions 0",
        'strata_cluster_isr_size{partition="1/1/0"} 3',
        'strata_cluster_leader_epoch{partition="1/1/0"} 1',
        'strata_cluster_follower_lag_records{partition="1/1/0"}',
        'strata_cluster_follower_lag_seconds{partition="1/1/0"}',
        "strata_cluster_lease_keepalive_age_seconds",
        'strata_cluster_etcd_request_duration_seconds_count{op="lease_keepalive"}',
      ]
    ) t.ok(metrics.includes(name), name);

    const elsewhere = cluster.nodes.find((n) => n.id !== leaderNow)!;
    const path = "/streams/kafka/topics/orders/messages";
    const body = JSON.stringify({ partition: 0, messages: [{ payload: btoa("over http") }] });
    const redirected = await fetch(`${elsewhere.httpUrl}${path}`, {
      method: "POST",
      body,
      redirect: "manual",
    });
    t.equal(redirected.status, 307);
    t.equal(redirected.headers.get("location"), `${cluster.node(leaderNow).httpUrl}${path}`);
    t.match(await redirected.json(), { error: "not_leader" });
    const client = new StrataClient({ baseUrl: elsewhere.httpUrl });
    const viaHttp = await client.produce("kafka", "orders", [{
      key: null,
      payload: new TextEncoder().encode("client"),
    }], 0);
    t.equal(viaHttp.partition, 0);
    const polled = await client.poll("kafka", "orders", 0, { offset: viaHttp.base_offset, count: 1 });
    t.equal(
      new TextDecoder().decode(polled.messages[0]!.payload!),
      "client",
      "read back through a redirect too",
    );
    // A purge is not replicated yet: refused, and nothing is deleted on any replica.
    const purge = await fetch(`${cluster.node(leaderNow).httpUrl}/streams/kafka/topics/orders/messages`, {
      method: "DELETE",
    });
    t.equal(purge.status, 409);
    t.match(await purge.json(), {
      error: "not_replicated",
      message: /Cannot purge kafka\/orders in cluster mode/,
    });
    // librdkafka retries a produce whose answer it lost; as an idempotent producer it never gets a
    // line written twice, and its lines keep their order.
    const everything = [...(await readPartition(others, "orders")).values()];
    t.same(everything.filter((v) => v.startsWith("kcat-live-")), kcatLines, "each kcat line once, in order");
    t.equal(
      everything.filter((v) => !v.startsWith("kcat-live-")).length,
      351,
      "300 from kafkajs, 50 from kcat after the kill, 1 over HTTP",
    );
  },
);
