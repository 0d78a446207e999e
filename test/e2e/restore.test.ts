import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { StrataClient } from "../../src/client/strata_client.ts";
import { FsObjectStore } from "../../src/objectstore/fs_object_store.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { decodeManifest } from "../../src/tier/bucket/manifest.ts";
import { topicManifestKey } from "../../src/tier/bucket/object_keys.ts";
import { bucketEnv } from "../helpers/bucket_env.ts";
import { configCopy } from "../helpers/config_copy.ts";
import { kafkaAddressOf, kcat, kcatUnavailable } from "../helpers/kafka/kcat.ts";
import { runDenoTask } from "../helpers/run_task.ts";
import { spawnServer } from "../helpers/spawn_server.ts";
import { createSourceTopic, produceRecords, readAll, sameRecords } from "../helpers/topic_records.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

// A topic produced, tiered and evicted on one server; that server's data directory deleted; a fresh
// server of another cluster id restores the topic from the bucket (the objects stay where they are)
// and every record reads back byte for byte from offset 0, over HTTP and with kcat, and producing
// goes on at the next offset. Then the same restore from the listing alone (the manifests deleted),
// and from a manifest older than the last segments, through the admin call of the running server.

const sourceCluster = "5ca1ab1e";
const partitions = 2;
const disk = new NodeDisk();

function envOf(bucket: string, clusterId: string): Record<string, string> {
  return {
    ...bucketEnv(bucket, clusterId),
    // The test lays manifests and listings side by side as the uploads left them; an idle source's
    // merges (test/e2e/merge_segments.test.ts restores a merged topic) would replace segments under them.
    STRATA_TIERED_STORAGE_HOUSEKEEPING_MERGE_SEGMENTS: "false",
  };
}

function restoreCommand(config: string, env: Record<string, string>, ...args: string[]) {
  return runDenoTask("restore", ["--config", config, ...args], env);
}

t.test("a topic restored from the bucket reads back whole, and producing goes on at the next offset", {
  skip: kcatUnavailable() ?? false,
}, async (t) => {
  await initCrc32c();
  const dir = mkdtempSync(join(tmpdir(), "strata-restore-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const bucket = join(dir, "bucket");
  const store = new FsObjectStore(disk, bucket, new Rng(7));
  for (const d of ["a", "b"]) mkdirSync(join(dir, d));
  const source = await spawnServer(["--config", configCopy(join(dir, "a"))], envOf(bucket, sourceCluster));
  t.teardown(() => source.stop("SIGKILL"));
  const a = new StrataClient({ baseUrl: source.baseUrl, encoding: "msgpack" });
  await createSourceTopic(a, "t", partitions);
  // The stream and topic are the source's first (ids 1 and 1); each partition's manifest key is found by listing.
  const manifestKeyOf = async (p: number) =>
    (await store.list(`strata/${sourceCluster}/meta/1/1/${p}/`)).objects.find((o) =>
      o.key.endsWith("/manifest.bin")
    )
      ?.key ?? null;
  const manifestOf = async (p: number) => {
    const key = await manifestKeyOf(p);
    if (key === null) return null;
    const head = (await store.head(key))!;
    return decodeManifest(Buffer.concat(await store.getRange(key, 0, head.sizeBytes)));
  };
  const tieredAll = async (end: number) => {
    for (let p = 0; p < partitions; p++) {
      t.ok(await a.awaitTiered("kafka", "t", p, end, 60_000), `partition ${p} tiered to ${end}`);
    }
    // The server rewrites a manifest while the test reads it: a HEAD of one version and a ranged read
    // of the next decode as a torn manifest, which is not yet the answer, and is read again.
    await waitFor(
      `both manifests to describe the floor ${end}`,
      async () =>
        (await manifestOf(0))?.tieredUpToOffset === end && (await manifestOf(1))?.tieredUpToOffset === end,
      { deadlineMs: 60_000, pace: realTime(100), throwMeansNotYet: true },
    );
  };
  await produceRecords(a, partitions, "t", 0, 300);
  await tieredAll(300);
  const oldKey = (await manifestKeyOf(0))!;
  const otherKey = (await manifestKeyOf(1))!;
  const oldManifest = Buffer.concat(await store.getRange(oldKey, 0, (await store.head(oldKey))!.sizeBytes));
  await produceRecords(a, partitions, "t", 300, 300);
  await tieredAll(600);
  t.ok(
    await store.head(topicManifestKey("strata", sourceCluster, 1, 1)),
    "the topic manifest is in the bucket",
  );
  const expected = [await readAll(a, "t", 0), await readAll(a, "t", 1)];
  t.equal(await source.stop("SIGTERM"), 0);
  rmSync(join(dir, "a", "data"), { recursive: true, force: true });

  // A fresh server's data directory, another cluster id: the command restores while it is stopped.
  const configB = configCopy(join(dir, "b"));
  const envB = envOf(bucket, "0b0b0b0b");
  const dry = await restoreCommand(configB, envB, "--stream", "kafka", "--topic", "t", "--dry-run");
  t.equal(dry.code, 0, dry.err);
  t.equal(JSON.parse(dry.out).partitions[0].next_offset, 600, "the dry run plans up to offset 600");
  const restored = await restoreCommand(configB, envB, "--stream", "kafka", "--topic", "t");
  t.equal(restored.code, 0, restored.err);
  const report = JSON.parse(restored.out);
  t.same(report.source, {
    cluster_id: sourceCluster,
    stream: "kafka",
    topic: "t",
    stream_id: 1,
    topic_id: 1,
  });
  t.same(report.partitions.map((p: { next_offset: number }) => p.next_offset), [600, 600]);
  t.ok(
    report.partitions.every((p: { sources: { source: string }[] }) =>
      p.sources.some((s) => s.source === "manifest")
    ),
  );
  const again = await restoreCommand(configB, envB, "--stream", "kafka", "--topic", "t");
  t.equal(again.code, 2, "a topic that exists is refused");
  t.match(again.err, /Cannot restore kafka\/t: the topic exists/);

  const target = await spawnServer(["--config", configB], envB);
  t.teardown(() => target.stop("SIGKILL"));
  const b = new StrataClient({ baseUrl: target.baseUrl, encoding: "msgpack" });
  for (let p = 0; p < partitions; p++) {
    sameRecords(t, await readAll(b, "t", p), expected[p]!, `HTTP, partition ${p}`);
  }
  const consumed = await kcat(
    [
      "-b",
      kafkaAddressOf(target.stderr()),
      "-C",
      "-t",
      "t",
      "-p",
      "0",
      "-o",
      "beginning",
      "-e",
      "-q",
      "-f",
      "%o %k %T\n",
    ],
    "",
    120_000,
  );
  t.equal(consumed.code, 0, consumed.stderr);
  t.same(
    consumed.stdout.trimEnd().split("\n"),
    expected[0]!.map((m) => `${m.offset} ${m.key} ${m.timestamp}`),
    "kcat reads every record of the restored partition, in order",
  );
  const next = await b.produce("kafka", "t", [{ payload: new Uint8Array([1]) }], 0);
  t.equal(next.base_offset, 600, "producing goes on at the next offset");

  // The admin call while the server runs: from the listing alone, then from a stale manifest. The
  // running server writes under its own cluster id in the same bucket, so the source is named.
  const admin = (body: Record<string, unknown>) =>
    fetch(`${target.baseUrl}/admin/restore`, {
      method: "POST",
      body: JSON.stringify({ cluster_id: sourceCluster, ...body }),
    });
  await store.delete([oldKey, otherKey]);
  const fromListing = await admin({ stream: "kafka", topic: "t", as: "t-listed" });
  const listedReport = await fromListing.json();
  t.equal(fromListing.status, 201, JSON.stringify(listedReport));
  t.ok(
    listedReport.partitions.every((p: { sources: { source: string }[] }) =>
      p.sources.every((s) => s.source === "listing")
    ),
    "without manifests every range came from the listing",
  );
  for (let p = 0; p < partitions; p++) {
    sameRecords(t, await readAll(b, "t-listed", p), expected[p]!, `listing, partition ${p}`);
  }

  await store.put(oldKey, async function* () {
    yield oldManifest;
  }, { sizeBytes: oldManifest.length, metadata: { "format-version": "2" }, ifAbsent: false });
  const fromStale = await admin({ stream: "kafka", topic: "t", as: "t-stale", partition: 0 });
  t.equal(fromStale.status, 201);
  const staleSources = (await fromStale.json()).partitions[0].sources.map((s: { source: string }) =>
    s.source
  );
  t.same(
    [staleSources[0], staleSources.at(-1)],
    ["manifest", "listing"],
    "the stale manifest's range, then the listing's",
  );
  sameRecords(t, await readAll(b, "t-stale", 0), expected[0]!, "stale manifest, partition 0");
  t.same(await readAll(b, "t-stale", 1), [], "--partition 0: the other partition starts empty");

  const refusals = [
    [{ stream: "kafka", topic: "nothing" }, 409, /no topic manifest of kafka\/nothing/],
    [{ stream: "kafka", topic: "t", as: "t-listed" }, 409, /the topic exists/],
    [{ stream: "kafka", topic: "t", as: "t-9", partition: 9 }, 409, /the topic has partitions 0 to 1/],
    [{ stream: "kafka" }, 400, /"topic" must be a non-empty string/],
    [{ stream: "kafka", topic: "t", force: true }, 400, /unknown field "force"/],
  ] as const;
  for (const [body, status, message] of refusals) {
    const r = await admin(body);
    t.equal(r.status, status, JSON.stringify(body));
    t.match((await r.json()).message, message);
  }
  // The restored topic's own manifests say where its oldest segments are: restoring it again is refused.
  await waitFor(
    "the restored topic's manifest in the bucket under the target's cluster id",
    async () => (await store.head(topicManifestKey("strata", "0b0b0b0b", 1, 1))) !== null,
    { deadlineMs: 30_000, pace: realTime(100) },
  );
  const chained = await admin({ cluster_id: "0b0b0b0b", stream: "kafka", topic: "t", as: "t-again" });
  t.equal(chained.status, 409);
  t.match(
    (await chained.json()).message,
    /it was itself restored, and its oldest segments are objects of cluster 5ca1ab1e/,
  );
  t.equal(await target.stop("SIGTERM"), 0);
});
