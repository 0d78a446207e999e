import { mkdirSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { StrataApiError, StrataClient } from "../../src/client/strata_client.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { decodeManifest, type PartitionManifest } from "../../src/tier/bucket/manifest.ts";
import { configCopy } from "../helpers/config_copy.ts";
import { kafkaAddressOf, kcat, kcatUnavailable } from "../helpers/kafka/kcat.ts";
import { createBucket, ourStore } from "../helpers/harnesses/s3_harness.ts";
import { startS3rver } from "../helpers/harnesses/s3rver_harness.ts";
import { spawnServer } from "../helpers/spawn_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { createSourceTopic, produceRecords, readAll, sameRecords } from "../helpers/topic_records.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

// A read-replica topic on a second server follows a topic of the first through a shared bucket
// (s3rver): created from the bucket, it serves what the source uploaded byte for byte, over HTTP
// and Kafka; it sees new segments within one poll interval of their manifest; it drops what the
// source's retention deleted; it refuses writes; and it serves the same after a restart.

const partitions = 2;
const sourceCluster = "a1a1a1a1";
const pollIntervalMs = 1000;
const bucket = "strata-replica";

t.test("a read replica follows its source through the bucket", {
  skip: kcatUnavailable() ?? false,
}, async (t) => {
  await initCrc32c();
  const endpoint = await startS3rver(t);
  await createBucket(endpoint, bucket);
  const store = ourStore(endpoint, bucket, { conditionalWrites: false });
  t.teardown(() => store.close());
  const dir = tempDir(t, "strata-read-replica-");
  const envOf = (clusterId: string) => ({
    STRATA_SYSTEM_CLUSTER_ID: clusterId,
    STRATA_TIERED_STORAGE_BACKEND: "s3",
    STRATA_TIERED_STORAGE_S3_BUCKET: bucket,
    STRATA_TIERED_STORAGE_S3_ENDPOINT: endpoint.endpoint,
    STRATA_TIERED_STORAGE_READ_REPLICA_POLL_INTERVAL: `${pollIntervalMs} ms`,
    STRATA_TIERED_STORAGE_HOUSEKEEPING_IDLE_TIMEOUT: "1 s",
    STRATA_TIERED_STORAGE_HOUSEKEEPING_MANIFEST_UPLOAD_INTERVAL: "1 s",
    AWS_ACCESS_KEY_ID: endpoint.accessKeyId,
    AWS_SECRET_ACCESS_KEY: endpoint.secretAccessKey,
  });
  for (const d of ["a", "b", "c"]) mkdirSync(join(dir, d));
  const source = await spawnServer(["--config", configCopy(join(dir, "a"))], envOf(sourceCluster));
  t.teardown(() => source.stop("SIGKILL"));
  const a = new StrataClient({ baseUrl: source.baseUrl, encoding: "msgpack" });
  await createSourceTopic(a, "t", partitions);
  // The source's stream and topic are its first (ids 1 and 1).
  const manifestOf = async (p: number): Promise<PartitionManifest | null> => {
    const listed = (await store.list(`strata/${sourceCluster}/meta/1/1/${p}/`)).objects;
    const m = listed.find((o) => o.key.endsWith("/manifest.bin"));
    if (m === undefined) return null;
    // The source may replace the manifest between the listing and the read: a torn read is retried.
    return await store.getRange(m.key, 0, m.sizeBytes).then((pieces) => decodeManifest(Buffer.concat(pieces)))
      .catch(() => null);
  };
  const manifestsAt = async (end: number) => {
    for (let p = 0; p < partitions; p++) {
      t.ok(await a.awaitTiered("kafka", "t", p, end, 60_000), `partition ${p} tiered to ${end}`);
    }
    await waitFor(`the source's manifests to describe the floor ${end}`, async () => {
      const ms = await Promise.all([0, 1].map(manifestOf));
      return ms.every((m) => m?.tieredUpToOffset === end);
    }, { deadlineMs: 60_000, pace: realTime(100) });
  };
  await produceRecords(a, partitions, "t", 0, 200);
  await manifestsAt(200);

  const configB = configCopy(join(dir, "b"));
  const target = await spawnServer(["--config", configB], envOf("b2b2b2b2"));
  t.teardown(() => target.stop("SIGKILL"));
  const b = new StrataClient({ baseUrl: target.baseUrl, encoding: "msgpack" });
  await b.createStream("kafka");
  const created = await b.createTopic("kafka", {
    name: "r",
    read_replica_of: { cluster_id: sourceCluster, stream: "kafka", topic: "t" },
  });
  t.same(created["read_replica_of"], {
    cluster_id: sourceCluster,
    stream: "kafka",
    topic: "t",
    bucket: null,
  });
  t.equal(created["partitions"], partitions, "the source's options");
  // A third server keeps its own data in another bucket and follows the source's by naming it.
  await createBucket(endpoint, "strata-other");
  const other = await spawnServer(["--config", configCopy(join(dir, "c"))], {
    ...envOf("c3c3c3c3"),
    STRATA_TIERED_STORAGE_S3_BUCKET: "strata-other",
  });
  t.teardown(() => other.stop("SIGKILL"));
  const c = new StrataClient({ baseUrl: other.baseUrl, encoding: "msgpack" });
  await c.createStream("kafka");
  await c.createTopic("kafka", {
    name: "r",
    read_replica_of: { cluster_id: sourceCluster, stream: "kafka", topic: "t", bucket },
  });
  const replicas = [["shared bucket", b], ["another bucket", c]] as const;
  const offsetsOf = async (client: StrataClient, field: string) =>
    await Promise.all([0, 1].map(async (p) => (await client.partition("kafka", "r", p))[field]));
  const nextOffsets =
    async () => [...await offsetsOf(b, "next_offset"), ...await offsetsOf(c, "next_offset")];
  t.same(await nextOffsets(), [200, 200, 200, 200], "created with what the source has tiered");
  const sameAsSource = async (what: string) => {
    for (const [where, client] of replicas) {
      for (let p = 0; p < partitions; p++) {
        sameRecords(
          t,
          await readAll(client, "r", p),
          await readAll(a, "t", p),
          `${where}, ${what}, partition ${p}`,
        );
      }
    }
  };
  await sameAsSource("at creation");

  // New segments: from the moment the source's manifests describe them to the replica serving them.
  await produceRecords(a, partitions, "t", 200, 200);
  await manifestsAt(400);
  const describedAtMs = Date.now();
  await waitFor(
    "the replica to serve every record",
    async () => (await nextOffsets()).every((o) => o === 400),
    { deadlineMs: 30_000, pace: realTime(100) },
  );
  const lagMs = Date.now() - describedAtMs;
  t.ok(
    lagMs <= pollIntervalMs + 1500,
    `the replica served the new segments ${lagMs} ms after their manifest`,
  );
  await sameAsSource("followed");
  const consumed = await kcat(
    [
      "-b",
      kafkaAddressOf(target.stderr()),
      "-C",
      "-t",
      "r",
      "-p",
      "1",
      "-o",
      "beginning",
      "-e",
      "-q",
      "-f",
      "%o %k %T %S\n",
    ],
    "",
    120_000,
  );
  t.equal(consumed.code, 0, consumed.stderr);
  t.same(
    consumed.stdout.trimEnd().split("\n"),
    (await readAll(a, "t", 1)).map((m) => `${m.offset} ${m.key} ${m.timestamp} ${m.payload!.length}`),
    "kcat reads the replica's partition as the source's, in order",
  );

  // Writes are refused, with a clear error, over HTTP and Kafka.
  const refused = async (what: string, write: () => Promise<unknown>) => {
    const error = await write().then(() => null, (e) => e);
    t.ok(error instanceof StrataApiError && error.status === 409 && error.code === "read_replica", what);
    t.match(String(error?.message), /read replica of kafka\/t of cluster a1a1a1a1, served read-only/);
  };
  await refused("produce", () => b.produce("kafka", "r", [{ payload: new Uint8Array([1]) }], 0));
  await refused("purge", () => b.purgeTopic("kafka", "r"));
  await refused("an option change", () => b.patchTopic("kafka", "r", { retention_max_age: "1 h" }));
  const kafkaProduce = await kcat(["-b", kafkaAddressOf(target.stderr()), "-P", "-t", "r", "-p", "0"], "x\n");
  t.not(kafkaProduce.code, 0, "a Kafka produce to the replica fails");
  t.match(kafkaProduce.stderr, /Invalid topic|INVALID_TOPIC/i, kafkaProduce.stderr);

  // The source's retention deletes its oldest segments: the replica retires them too.
  await a.patchTopic("kafka", "t", { retention_max_bytes: "2 MiB" });
  const sourceStart = async (p: number) => (await a.partition("kafka", "t", p))["first_offset"] as number;
  await waitFor(
    "the source's retention to delete its oldest segments",
    async () => (await sourceStart(0)) > 0 && (await sourceStart(1)) > 0,
    { deadlineMs: 60_000, pace: realTime(100) },
  );
  const starts = [await sourceStart(0), await sourceStart(1)];
  // Each replica polls its own bucket on its own schedule: both are waited for.
  await waitFor(
    `both replicas' partitions to start where the source's do: ${starts.join(", ")}`,
    async () => {
      const replica = await Promise.all(
        [b, c].flatMap((client) =>
          [0, 1].map(async (p) => (await client.partition("kafka", "r", p))["first_offset"])
        ),
      );
      return replica.every((start, i) => start === starts[i % 2]);
    },
    { deadlineMs: 30_000, pace: realTime(100) },
  );
  await sameAsSource("after the source's retention");

  t.equal(await target.stop("SIGTERM"), 0);
  const again = await spawnServer(["--config", configB], envOf("b2b2b2b2"));
  t.teardown(() => again.stop("SIGKILL"));
  const b2 = new StrataClient({ baseUrl: again.baseUrl, encoding: "msgpack" });
  for (let p = 0; p < partitions; p++) {
    sameRecords(t, await readAll(b2, "r", p), await readAll(a, "t", p), `after a restart, partition ${p}`);
  }
  t.equal(await again.stop("SIGTERM"), 0);
  t.equal(await source.stop("SIGTERM"), 0);
});
