import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { Kafka, logLevel } from "kafkajs";
import { StrataClient } from "../../src/client/strata_client.ts";
import { FsObjectStore } from "../../src/objectstore/fs_object_store.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { topicManifestKey } from "../../src/tier/bucket/object_keys.ts";
import { bucketEnv } from "../helpers/bucket_env.ts";
import { configCopy } from "../helpers/config_copy.ts";
import { kafkaAddressOf } from "../helpers/kafka/kcat.ts";
import { runDenoTask } from "../helpers/run_task.ts";
import { spawnServer } from "../helpers/spawn_server.ts";
import { createSourceTopic } from "../helpers/topic_records.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

// Transactions across tiered storage: a tiered topic whose transactions commit and abort in turn is
// evicted to the bucket, and a read_committed reader still leaves out every aborted record, from
// the evicted segments (their .txnindex kept beside their .index) and from the same topic restored
// on another server from the bucket alone (the .txnindex objects).

const sourceCluster = "7a11ed00";
const transactions = 40;
/** Each transaction's record: about a tenth of a 1 MiB segment, so that aborts land in several. */
const padding = "x".repeat(100_000);

/** The names of the records a read_committed reader of the HTTP API reads below `endOffset`. */
async function committedNames(baseUrl: string, endOffset: number): Promise<string[]> {
  const names: string[] = [];
  let offset = 0;
  for (let round = 0; round < 1000 && offset < endOffset; round++) {
    const url = `${baseUrl}/streams/kafka/topics/tt/partitions/0/messages?offset=${offset}` +
      `&isolation=read_committed&max_bytes=4194304`;
    const answer = await fetch(url);
    if (answer.status !== 200) throw new Error(`Cannot poll: ${answer.status} ${await answer.text()}`);
    const body = await answer.json() as {
      messages: { offset: number; payload: string }[];
      next_offset: number;
    };
    for (const m of body.messages) {
      if (m.offset < endOffset) names.push(Buffer.from(m.payload, "base64").toString().split(":")[0]!);
    }
    if (body.next_offset <= offset) break;
    offset = body.next_offset;
  }
  return names;
}

t.test("read_committed leaves out aborted records of evicted segments, and of a topic restored from the bucket", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "strata-txn-tiered-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const bucket = join(dir, "bucket");
  for (const d of ["a", "b"]) mkdirSync(join(dir, d));
  const source = await spawnServer(
    ["--config", configCopy(join(dir, "a"))],
    bucketEnv(bucket, sourceCluster),
  );
  t.teardown(() => source.stop("SIGKILL"));
  const a = new StrataClient({ baseUrl: source.baseUrl, encoding: "msgpack" });
  await createSourceTopic(a, "tt", 1);
  const kafka = new Kafka({
    clientId: "txn-tiered",
    brokers: [kafkaAddressOf(source.stderr())],
    logLevel: logLevel.NOTHING,
  });
  const producer = kafka.producer({ transactionalId: "tiered", maxInFlightRequests: 1, idempotent: true });
  await producer.connect();
  t.teardown(() => producer.disconnect());
  const expected: string[] = [];
  for (let i = 0; i < transactions; i++) {
    const txn = await producer.transaction();
    await txn.send({ topic: "tt", messages: [{ partition: 0, value: `t${i}:${padding}` }] });
    if (i % 2 === 0) {
      await txn.commit();
      expected.push(`t${i}`);
    } else await txn.abort();
  }
  const end = ((await a.partition("kafka", "tt", 0)) as { next_offset: number }).next_offset;
  // Plain records after the transactions roll the segment that holds the last of them.
  for (let i = 0; i < 12; i++) {
    await a.produce("kafka", "tt", [{ payload: new Uint8Array(100_000) }], 0);
  }
  t.ok(await a.awaitTiered("kafka", "tt", 0, end, 60_000), `tiered past the transactions' end, ${end}`);
  await waitFor("the transactions' segments to be evicted", async () => {
    const p = await a.partition("kafka", "tt", 0) as {
      segments: { start_offset: number; location: string }[];
    };
    return p.segments.filter((s) => s.start_offset < end - 10).every((s) => s.location === "remote");
  }, { deadlineMs: 60_000, pace: realTime(100) });
  t.same(await committedNames(source.baseUrl, end), expected, "evicted: the committed records only");
  const store = new FsObjectStore(new NodeDisk(), bucket, new Rng(7));
  await waitFor("the topic manifest in the bucket", async () => {
    return await store.head(topicManifestKey("strata", sourceCluster, 1, 1)) !== null;
  }, { deadlineMs: 30_000, pace: realTime(100) });

  t.equal(await source.stop("SIGTERM"), 0);
  const configB = configCopy(join(dir, "b"));
  const envB = bucketEnv(bucket, "0b0b0b0b");
  const restored = await runDenoTask(
    "restore",
    ["--config", configB, "--stream", "kafka", "--topic", "tt"],
    envB,
  );
  t.equal(restored.code, 0, restored.err);
  const target = await spawnServer(["--config", configB], envB);
  t.teardown(() => target.stop("SIGKILL"));
  t.same(await committedNames(target.baseUrl, end), expected, "restored: the committed records only");
});
