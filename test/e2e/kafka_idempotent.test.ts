import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { Kafka, logLevel } from "kafkajs";
import { apiKey } from "../../src/kafka/wire/frame_codec.ts";
import { configCopy } from "../helpers/config_copy.ts";
import { AnswerDroppingProxy } from "../helpers/kafka/answer_dropping_proxy.ts";
import { kafkaAddressOf, kcat, kcatUnavailable } from "../helpers/kafka/kcat.ts";
import { spawnServer } from "../helpers/spawn_server.ts";

// Idempotent producers of three clients against the real server: librdkafka (Python) through a
// proxy that loses produce answers, so that the client retries batches the broker appended; kcat
// (librdkafka too) and kafkajs with idempotence on. Each record is in the partition exactly once.
const pythonMissing = spawnSync("/usr/bin/python3", ["-c", "import confluent_kafka"]).status !== 0;
const loadScript = new URL("../helpers/kafka/idempotent_load.py", import.meta.url).pathname;

function load(mode: "produce" | "check", broker: string, topic: string, records: number) {
  return new Promise<Record<string, unknown>>((resolve, reject) => {
    execFile("/usr/bin/python3", [loadScript, mode, broker, topic, String(records)], { timeout: 120_000 }, (
      error,
      stdout,
      stderr,
    ) => {
      if (error !== null) reject(new Error(`Cannot ${mode}: ${stderr.slice(-2000)}`, { cause: error }));
      else resolve(JSON.parse(stdout));
    });
  });
}

async function server(t: Test, env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), "strata-idempotent-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const running = await spawnServer(["--config", configCopy(dir)], env);
  t.teardown(() => running.stop("SIGKILL"));
  return kafkaAddressOf(running.stderr());
}

t.test(
  "librdkafka's idempotent producer whose produce answers are lost writes every record once",
  { skip: pythonMissing ? "python3-confluent-kafka is not installed (.ci/run installs it)" : false },
  async (t) => {
    // The broker advertises the proxy's address, so that every request of the client goes through it.
    const proxy = await AnswerDroppingProxy.start(apiKey.produce, 3);
    t.teardown(() => proxy.close());
    const broker = await server(t, { STRATA_KAFKA_ADVERTISED_ADDRESS: `127.0.0.1:${proxy.port}` });
    const [host, port] = broker.split(":");
    proxy.target = { host: host!, port: Number(port) };
    const records = 5000;
    const produced = await load("produce", `127.0.0.1:${proxy.port}`, "lossy", records);
    t.same(produced, { records, delivered: records, errors: [], left: 0 }, "every record delivered");
    t.equal(proxy.dropped, 3, "three produce answers were lost, so three requests were retried");
    const checked = await load("check", broker, "lossy", records);
    t.same(checked, { read: records, exactly_once: true, misplaced: [] });
  },
);

t.test("kcat with enable.idempotence produces and reads back every record once", {
  skip: kcatUnavailable() ?? false,
}, async (t) => {
  const broker = await server(t);
  const lines = Array.from({ length: 2000 }, (_, i) => `r${i}`);
  const produced = await kcat(
    ["-b", broker, "-P", "-t", "kidem", "-p", "0", "-X", "enable.idempotence=true"],
    lines.join("\n") + "\n",
  );
  t.equal(produced.code, 0, produced.stderr);
  const read = await kcat(["-b", broker, "-C", "-t", "kidem", "-p", "0", "-o", "beginning", "-e", "-q"]);
  t.same(read.stdout.trim().split("\n"), lines);
});

t.test("kafkajs's idempotent producer produces and reads back every record once", async (t) => {
  const broker = await server(t);
  const kafka = new Kafka({ clientId: "strata-test", brokers: [broker], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());
  await admin.createTopics({ topics: [{ topic: "jidem", numPartitions: 1 }] });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  t.teardown(() => producer.disconnect());
  for (let round = 0; round < 5; round++) {
    const sent = await producer.send({
      topic: "jidem",
      acks: -1,
      messages: Array.from({ length: 20 }, (_, i) => ({ partition: 0, value: `v${round * 20 + i}` })),
    });
    t.equal(sent[0]!.errorCode, 0);
    t.equal(sent[0]!.baseOffset, String(round * 20), `round ${round} at its offset`);
  }
  const offsets = await admin.fetchTopicOffsets("jidem");
  t.equal(offsets[0]!.high, "100", "100 records, none twice");
});
