import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { type PolledMessage, StrataClient } from "../../src/client/strata_client.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { configCopy } from "../helpers/config_copy.ts";
import { etcdUnavailableReason } from "../helpers/harnesses/etcd_harness.ts";
import { kcatUnavailable } from "../helpers/kafka/kcat.ts";
import { createBucket, ourStore } from "../helpers/harnesses/s3_harness.ts";
import { startS3rver } from "../helpers/harnesses/s3rver_harness.ts";
import { spawnServer } from "../helpers/spawn_server.ts";
import { describePartition } from "../../scripts/lib/kafka_metadata.ts";
import { partitionDirOf, startStrataCluster } from "../helpers/strata_cluster.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { tableMarkersIn } from "../helpers/remote_table_file.ts";
import { createSourceTopic, produceRecords, readAll, sameRecords } from "../helpers/topic_records.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

// A topic produced and tiered by a single node is restored into a 3-node cluster sharing its bucket
// (s3rver): every replica seeds the partitions from the source's chain; producing goes on at the
// next offset and the leader uploads under the cluster's keys; after the leader is killed, the new
// one serves every record; a replica whose data directory was wiped seeds the source's chain and
// the cluster's own above it.

await initCrc32c();
const skip = etcdUnavailableReason() ?? kcatUnavailable() ?? false;
const partitions = 2;
const sourceCluster = "5ca1ab1e";
const bucket = "strata-restore";

/**
 * Waits until `client`'s node serves `offset` of partition `partition` of `topic`: after a failover
 * the new leader holds every acknowledged record, but serves them only once its high watermark,
 * which it took over from its time as a follower, has moved past them (its followers' next fetch
 * moves it). A read before that is short without anything being lost.
 */
function servesOffset(client: StrataClient, topic: string, partition: number, offset: number) {
  return waitFor(`the new leader of ${topic}/${partition} to serve offset ${offset}`, async () => {
    const polled = await client.poll("kafka", topic, partition, { offset, count: 1 });
    return polled.messages.length === 1;
  }, { deadlineMs: 30_000, pace: realTime(50), throwMeansNotYet: true });
}

/** The start offsets of the remote table's markers of the restored topic's partition on a node. */
function markersOn(node: Parameters<typeof partitionDirOf>[0], topicId: number, partition: number): number[] {
  return tableMarkersIn(partitionDirOf(node, topicId, partition)).map((m) => m.startOffset);
}

t.test("a topic restored into a cluster is seeded on every replica and survives its leader", {
  skip,
  timeout: 280_000,
}, async (t) => {
  const s3 = await startS3rver(t);
  await createBucket(s3, bucket);
  const store = ourStore(s3, bucket, { conditionalWrites: false });
  t.teardown(() => store.close());
  const dir = tempDir(t, "strata-cluster-restore-");
  mkdirSync(join(dir, "source"));
  const source = await spawnServer(["--config", configCopy(join(dir, "source"))], {
    STRATA_SYSTEM_CLUSTER_ID: sourceCluster,
    STRATA_TIERED_STORAGE_BACKEND: "s3",
    STRATA_TIERED_STORAGE_S3_BUCKET: bucket,
    STRATA_TIERED_STORAGE_S3_ENDPOINT: s3.endpoint,
    STRATA_TIERED_STORAGE_HOUSEKEEPING_IDLE_TIMEOUT: "1 s",
    STRATA_TIERED_STORAGE_HOUSEKEEPING_MANIFEST_UPLOAD_INTERVAL: "1 s",
    AWS_ACCESS_KEY_ID: s3.accessKeyId,
    AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
  });
  t.teardown(() => source.stop("SIGKILL"));
  const a = new StrataClient({ baseUrl: source.baseUrl, encoding: "msgpack" });
  await createSourceTopic(a, "t", partitions);
  await produceRecords(a, partitions, "t", 0, 150);
  for (let p = 0; p < partitions; p++) t.ok(await a.awaitTiered("kafka", "t", p, 150, 60_000));
  const manifests = async () => (await store.list(`strata/${sourceCluster}/meta/1/1/`)).objects;
  await waitFor(
    "the source's partition manifests",
    async () => (await manifests()).filter((o) => o.key.endsWith("manifest.bin")).length === 2,
    { deadlineMs: 60_000, pace: realTime(100) },
  );
  const expected = [await readAll(a, "t", 0), await readAll(a, "t", 1)];
  t.equal(await source.stop("SIGTERM"), 0);

  const cluster = await startStrataCluster(t, { portBase: 30_500, tiered: { store: s3, bucket } });
  const c = new StrataClient({ baseUrl: cluster.nodes[0]!.httpUrl, encoding: "msgpack" });
  const restored = await fetch(`${cluster.nodes[0]!.httpUrl}/admin/restore`, {
    method: "POST",
    body: JSON.stringify({ stream: "kafka", topic: "t", cluster_id: sourceCluster }),
  });
  const report = await restored.json();
  t.equal(restored.status, 201, JSON.stringify(report));
  const topicId = (await c.getTopic("kafka", "t"))["id"] as number;
  const sourceMarkers = report.partitions.map((p: { segments: number }) => p.segments);
  const opened = async (url: string) => (await fetch(`${url}/streams/kafka/topics/t`)).status === 200;
  await waitFor("every node to seed the restored partitions and open the topic", async () => {
    // A node that has not made the partition's directory yet throws here: not yet.
    const seeded = cluster.nodes.every((node) =>
      [0, 1].every((p) => markersOn(node, topicId, p).length === sourceMarkers[p])
    );
    return seeded && (await Promise.all(cluster.nodes.map((n) => opened(n.httpUrl)))).every((o) => o);
  }, { deadlineMs: 30_000, pace: realTime(50), throwMeansNotYet: true });
  t.pass("every node holds the source's chain as markers");
  for (let p = 0; p < partitions; p++) {
    sameRecords(t, await readAll(c, "t", p), expected[p]!, `restored, partition ${p}`);
  }

  // Producing goes on at the next offset; the leader uploads what follows under the cluster's keys.
  for (let p = 0; p < partitions; p++) {
    const next = await c.produce("kafka", "t", [{ payload: new Uint8Array([7]) }], p);
    t.equal(next.base_offset, 150, `partition ${p}: producing continues at the next offset`);
  }
  await produceRecords(c, partitions, "t", 151, 149);
  for (let p = 0; p < partitions; p++) {
    t.ok(await c.awaitTiered("kafka", "t", p, 250, 90_000), `partition ${p} tiered past the restored range`);
  }
  const clusterId = /"cluster_id":"([0-9a-f]+)"/.exec(cluster.nodes[0]!.server!.stderr())![1]!;
  t.ok(
    (await store.list(`strata/${clusterId}/1/${topicId}/0/`)).objects.some((o) => o.key.endsWith(".log")),
    "the cluster's own uploads are under its own keys",
  );
  const whole: PolledMessage[][] = [await readAll(c, "t", 0), await readAll(c, "t", 1)];
  t.same(whole.map((w) => w.length), [300, 300]);

  // The leader of partition 0 killed: the new one serves every record, the restored ones too.
  const before = (await describePartition(cluster.bootstrap, "t", 0))!;
  const leader = cluster.node(before.leader);
  await leader.signal("SIGKILL");
  const survivor = cluster.nodes.find((n) => n.id !== leader.id)!;
  const s = new StrataClient({ baseUrl: survivor.httpUrl, encoding: "msgpack" });
  await waitFor("another leader", async () => {
    const view = await describePartition(survivor.kafka, "t", 0);
    return view !== null && view.leader !== leader.id && view.leader !== -1;
  }, { deadlineMs: 30_000, pace: realTime(50) });
  await servesOffset(s, "t", 0, whole[0]!.length - 1);
  sameRecords(t, await readAll(s, "t", 0), whole[0]!, "after failover, partition 0");

  // A replica whose data directory was wiped: seeded from the source's chain and the cluster's own.
  rmSync(join(leader.configPath, "..", `data${leader.id}`), { recursive: true, force: true });
  await leader.restart();
  const floor = async () => (await s.partition("kafka", "t", 0))["tiered_up_to_offset"] as number;
  await waitFor("the wiped node to seed partition 0 up to the floor", async () => {
    const markers = markersOn(leader, topicId, 0);
    return markers.length > sourceMarkers[0] && markers[0] === 0 && markers.at(-1)! < (await floor());
  }, { deadlineMs: 60_000, pace: realTime(50), throwMeansNotYet: true });
  t.pass("the wiped replica holds the source's segments and the cluster's as markers");

  // A topic the cluster wrote (its batches carry leader epochs), restored under another name: its
  // leaders start above those epochs, and its followers take the new batches without a divergence.
  await s.createTopic("kafka", {
    name: "u",
    partitions: 1,
    segment_size: "1 MiB",
    segment_max_age: "1 s",
    local_retention_size: "1 MiB",
    tiered: true,
  });
  const uId = (await s.getTopic("kafka", "u"))["id"] as number;
  await produceRecords(s, 1, "u", 0, 150);
  t.ok(await s.awaitTiered("kafka", "u", 0, 150, 60_000), "the cluster's topic tiered");
  const uManifests = async () =>
    (await store.list(`strata/${clusterId}/meta/1/${uId}/`)).objects.map((o) => o.key);
  await waitFor(
    "the topic manifest of u",
    async () => (await uManifests()).some((k) => k.endsWith("topic.bin")),
    {
      deadlineMs: 60_000,
      pace: realTime(100),
    },
  );
  const expectedU = await readAll(s, "u", 0);
  const again = await fetch(`${survivor.httpUrl}/admin/restore`, {
    method: "POST",
    body: JSON.stringify({ stream: "kafka", topic: "u", as: "u2", cluster_id: clusterId }),
  });
  t.equal(again.status, 201, JSON.stringify(await again.json()));
  await waitFor(
    "every node to open u2",
    async () =>
      (await Promise.all(
        cluster.nodes.map(async (n) => (await fetch(`${n.httpUrl}/streams/kafka/topics/u2`)).status),
      ))
        .every((status) => status === 200),
    { deadlineMs: 30_000, pace: realTime(50) },
  );
  sameRecords(t, await readAll(s, "u2", 0), expectedU, "the cluster's own topic, restored");
  const u2Id = (await s.getTopic("kafka", "u2"))["id"] as number;
  const appended = await s.produce("kafka", "u2", [{ payload: new Uint8Array([9]) }], 0);
  t.equal(appended.base_offset, 150, "acknowledged by every in-sync replica at the next offset");
  const u2Leader = cluster.node((await describePartition(cluster.bootstrap, "u2", 0))!.leader);
  const head = readFileSync(join(partitionDirOf(u2Leader, u2Id, 0), `${String(150).padStart(20, "0")}.log`));
  t.ok(
    head.readInt32BE(12) >= 1,
    `the new batch carries leader epoch ${head.readInt32BE(12)}, above the source's`,
  );
  await u2Leader.signal("SIGKILL");
  const reader = cluster.nodes.find((n) => n.id !== u2Leader.id && n.server !== null)!;
  await waitFor("another leader of u2", async () => {
    const view = await describePartition(reader.kafka, "u2", 0);
    return view !== null && view.leader !== u2Leader.id && view.leader !== -1;
  }, { deadlineMs: 30_000, pace: realTime(50) });
  const u2 = new StrataClient({ baseUrl: reader.httpUrl, encoding: "msgpack" });
  await servesOffset(u2, "u2", 0, 150);
  const afterFailover = await readAll(u2, "u2", 0);
  t.equal(afterFailover.length, 151, "the new leader holds the restored records and the new one");
  sameRecords(t, afterFailover.slice(0, 150), expectedU, "u2 after failover");
});
