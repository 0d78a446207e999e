import t from "tap";
import { etcdUnavailableReason } from "../helpers/harnesses/etcd_harness.ts";
import { kcat, kcatUnavailable } from "../helpers/kafka/kcat.ts";
import { describePartition } from "../../scripts/lib/kafka_metadata.ts";
import {
  readPartition,
  sameSegmentsEverywhere,
  startStrataCluster,
  type StrataCluster,
} from "../helpers/strata_cluster.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

/** The waits on the cluster: real time, checked every 50 ms. */
const pace = realTime(50);
const skip = etcdUnavailableReason() ?? kcatUnavailable() ?? false;
const leaseTtlMs = 2000;

/** Produces `values` to partition 0 with acks=all through kcat; its exit code and what it said. */
function produce(brokers: string, topic: string, values: string[], timeoutMs = 20_000, extra: string[] = []) {
  return kcat(
    [
      "-P",
      "-b",
      brokers,
      "-t",
      topic,
      "-p",
      "0",
      "-X",
      "request.required.acks=-1",
      "-X",
      "message.timeout.ms=8000",
      ...extra,
    ],
    values.map((v) => `${v}\n`).join(""),
    timeoutMs,
  );
}

async function readValues(brokers: string, topic: string): Promise<string[]> {
  return [...(await readPartition(brokers, topic)).values()];
}

async function createTopic(cluster: StrataCluster, topic: string): Promise<void> {
  const node = cluster.nodes[0]!;
  for (const body of [{ name: "kafka" }]) {
    await fetch(`${node.httpUrl}/streams`, { method: "POST", body: JSON.stringify(body) });
  }
  const created = await fetch(`${node.httpUrl}/streams/kafka/topics`, {
    method: "POST",
    body: JSON.stringify({ name: topic, partitions: 1, replication_factor: 3, tiered: false }),
  });
  if (created.status !== 201) {
    throw new Error(`Cannot create ${topic}: ${created.status} ${await created.text()}`);
  }
  await waitFor(
    "three in sync",
    async () => (await describePartition(cluster.bootstrap, topic, 0))?.isr.length === 3,
    { deadlineMs: 10_000, pace },
  );
}

t.test(
  "followers killed and restarted; acks=all never falsely acknowledged",
  { skip, timeout: 240_000 },
  async (t) => {
    const cluster = await startStrataCluster(t, { portBase: 22_000 });
    await createTopic(cluster, "f");
    const leader = (await describePartition(cluster.bootstrap, "f", 0))!.leader;
    const [a, b] = cluster.nodes.filter((n) => n.id !== leader);
    t.equal((await produce(cluster.bootstrap, "f", ["one", "two"])).code, 0);

    await a!.signal("SIGKILL");
    await waitFor(
      "the in-sync set to shrink to two",
      async () => (await describePartition(cluster.bootstrap, "f", 0))?.isr.length === 2,
      { deadlineMs: 3 * leaseTtlMs, pace },
    );
    const withTwo = await produce(cluster.bootstrap, "f", ["three"]);
    t.equal(withTwo.code, 0, "acks=all goes on with min_insync_replicas = 2");

    await b!.signal("SIGKILL");
    await waitFor(
      "the in-sync set to shrink to the leader",
      async () => (await describePartition(cluster.node(leader).kafka, "f", 0))?.isr.length === 1,
      { deadlineMs: 3 * leaseTtlMs, pace },
    );
    // Without retries librdkafka reports the broker's refusal itself rather than a timeout.
    const alone = await produce(cluster.node(leader).kafka, "f", ["four"], 15_000, ["-X", "retries=0"]);
    t.match(alone.stderr, /Not enough in-sync replicas|NOT_ENOUGH_REPLICAS/i, "refused, not acknowledged");
    t.notOk(
      (await readValues(cluster.node(leader).kafka, "f")).includes("four"),
      "nothing refused is readable",
    );

    await a!.restart();
    await b!.restart();
    await waitFor(
      "both followers back in sync",
      async () => (await describePartition(cluster.bootstrap, "f", 0))?.isr.length === 3,
      { deadlineMs: 20_000, pace },
    );
    t.equal((await produce(cluster.bootstrap, "f", ["five"])).code, 0);
    t.same(await readValues(cluster.bootstrap, "f"), ["one", "two", "three", "five"]);
    await waitFor("every replica to hold the same segment bytes", () => sameSegmentsEverywhere(cluster), {
      deadlineMs: 10_000,
      pace,
    });
  },
);

t.test("a leader paused past its lease is fenced, rejoins as a follower and truncates its tail", {
  skip,
  timeout: 240_000,
}, async (t) => {
  const cluster = await startStrataCluster(t, { portBase: 23_000 });
  await createTopic(cluster, "z");
  t.equal((await produce(cluster.bootstrap, "z", ["a", "b"])).code, 0);
  const paused = (await describePartition(cluster.bootstrap, "z", 0))!.leader;
  const others = cluster.nodes.filter((n) => n.id !== paused).map((n) => n.kafka).join(",");
  const followers = cluster.nodes.filter((n) => n.id !== paused);
  // A tail only the leader holds: its followers held still (well within their leases) while it
  // takes a record with acks=1, then the leader is paused before they can fetch it.
  for (const f of followers) await f.signal("SIGSTOP");
  // The fetches they had parked at the leader are answered empty within its 500 ms wait; a stopped
  // follower sends no new one. (No condition to wait for: the followers are stopped.)
  await new Promise((resolve) => setTimeout(resolve, 600));
  const unreplicated = await produce(cluster.node(paused).kafka, "z", ["unreplicated"], 10_000, [
    "-X",
    "request.required.acks=1",
  ]);
  t.equal(unreplicated.code, 0, "the leader alone took a record with acks=1");
  await cluster.node(paused).signal("SIGSTOP");
  for (const f of followers) await f.signal("SIGCONT");
  await waitFor("another node to lead", async () => {
    const p = await describePartition(others, "z", 0);
    return p !== null && p.leader !== paused && p.leader > 0;
  }, { deadlineMs: 3 * leaseTtlMs, pace });
  t.equal((await produce(others, "z", ["c", "d"])).code, 0, "the new leader acknowledges");
  // Twice the lease in all, then the old leader runs again.
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, 2 * leaseTtlMs - 1000)));
  await cluster.node(paused).signal("SIGCONT");
  const rejoined = await waitFor("the paused node back in sync as a follower", async () => {
    const p = await describePartition(others, "z", 0);
    return p !== null && p.leader !== paused && p.isr.includes(paused);
  }, { deadlineMs: 20_000, pace });
  t.ok(rejoined < 20_000, `back in sync ${rejoined} ms after SIGCONT`);
  t.match(cluster.node(paused).server!.stderr(), /truncating a diverged log/, "it cut its unreplicated tail");
  // What the old leader may still think it serves, it must not acknowledge.
  const stale = await produce(cluster.node(paused).kafka, "z", ["stale"], 15_000);
  t.same(
    await readValues(others, "z"),
    stale.code === 0 ? ["a", "b", "c", "d", "stale"] : ["a", "b", "c", "d"],
  );
  await waitFor("the old leader's segments equal the new leader's", () => sameSegmentsEverywhere(cluster), {
    deadlineMs: 10_000,
    pace,
  });
});

t.test("etcd: one member lost changes nothing; its majority lost stops acknowledgements until it returns", {
  skip,
  timeout: 240_000,
}, async (t) => {
  const cluster = await startStrataCluster(t, { portBase: 24_000 });
  await createTopic(cluster, "e");
  cluster.etcd.kill(1);
  t.equal((await produce(cluster.bootstrap, "e", ["one"])).code, 0, "one member down: produce goes on");
  await new Promise((resolve) => setTimeout(resolve, 2 * leaseTtlMs));
  t.equal((await produce(cluster.bootstrap, "e", ["two"])).code, 0, "and still after two leases");
  cluster.etcd.kill(2);
  // Without a majority no lease is renewed: a lone etcd member may answer keepalives until it
  // notices it lost its quorum, and lease_ttl after the last one answered every node holds its lease
  // no longer (its own gauge says so), and no leader acknowledges.
  const lapsed = await waitFor("every node's lease to lapse", async () => {
    const ages = await Promise.all(cluster.nodes.map(async (n) => {
      const text = await (await fetch(`${n.httpUrl}/metrics`)).text();
      return Number(/^strata_cluster_lease_keepalive_age_seconds ([0-9.e+-]+)$/m.exec(text)?.[1] ?? 0);
    }));
    return ages.every((age) => age * 1000 > leaseTtlMs);
  }, { deadlineMs: 20_000, pace });
  t.comment(`every lease lapsed ${lapsed} ms after etcd lost its majority`);
  // No node leads without its lease: nothing can be read now either, and what the read-back after
  // the heal finds of "three" (unacknowledged, so it may or may not be there) is allowed.
  const lost = await produce(cluster.bootstrap, "e", ["three"], 15_000);
  t.not(lost.code, 0, "refused or timed out, never acknowledged");
  cluster.etcd.restart(1);
  cluster.etcd.restart(2);
  await waitFor(
    "produce to succeed again",
    async () => (await produce(cluster.bootstrap, "e", ["four"], 10_000)).code === 0,
    { deadlineMs: 30_000, pace },
  );
  const values = await readValues(cluster.bootstrap, "e");
  t.same(values.filter((v) => v !== "three"), ["one", "two", ...values.filter((v) => v === "four")]);
});
