import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { StrataClient } from "../../src/client/strata_client.ts";
import { kafkaErrorCode } from "../../src/kafka/kafka_errors.ts";
import { apiKey } from "../../src/kafka/wire/frame_codec.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { configCopy } from "../helpers/config_copy.ts";
import { filesUnder } from "../helpers/files_under.ts";
import { idempotentBatch } from "../helpers/kafka/idempotent_batch.ts";
import { kafkaAddressOf } from "../helpers/kafka/kcat.ts";
import {
  kafkaRequest,
  KafkaWireClient,
  produceBody,
  readProduceAnswer,
} from "../helpers/kafka/kafka_wire.ts";
import { type RunningServer, spawnServer } from "../helpers/spawn_server.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

// The real server SIGKILLed while it holds idempotent producers' state, three times: the state after
// each boot is the state before, whether the boot starts from the newest producer snapshot, from an
// older one (the newest deleted: the sealed segment after it is replayed), or after the segments that
// held the producer's batches were evicted to the bucket. Retries of batches from before each kill
// are answered with the offsets they were first given.

await initCrc32c();
const producerId = 40;
const batches = 8;
/** Every batch of producer 40 carries this time: the state is kept a day after it. */
const producedAtMs = Date.now();
const batchOf = (sequence: number) => idempotentBatch(producerId, 0, sequence, 1, producedAtMs);

interface Kafka {
  produce(
    topic: string,
    batch: Uint8Array,
  ): Promise<{ index: number; errorCode: number; baseOffset: number }>;
  close(): void;
}

async function kafkaOf(server: RunningServer): Promise<Kafka> {
  const port = Number(kafkaAddressOf(server.stderr()).split(":")[1]);
  const client = await KafkaWireClient.connect(port);
  let correlation = 0;
  return {
    produce: async (topic, batch) => {
      client.send(kafkaRequest(apiKey.produce, 7, ++correlation, produceBody(topic, 0, batch, -1)));
      const r = (await client.next(60_000))!;
      if (r.int32() !== correlation) throw new Error("Cannot read a produce answer: out of order");
      return readProduceAnswer(r, 7);
    },
    close: () => client.close(),
  };
}

t.test("idempotent producers' state survives SIGKILL: from the newest snapshot, from an older one, and past eviction", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "strata-idempotent-restart-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const config = configCopy(dir);
  let server = await spawnServer(["--config", config]);
  t.teardown(() => server.stop("SIGKILL"));
  let http = new StrataClient({ baseUrl: server.baseUrl, encoding: "msgpack" });
  let kafka = await kafkaOf(server);
  t.teardown(() => kafka.close());
  await http.createStream("kafka");
  // "kept" keeps its segments local; "evicted" keeps 1 MiB, so its older segments leave for the bucket.
  await http.createTopic("kafka", { name: "kept", segment_size: "1 MiB" });
  await http.createTopic("kafka", { name: "evicted", segment_size: "1 MiB", local_retention_size: "1 MiB" });
  const topics = ["kept", "evicted"] as const;
  const first: Record<string, number[]> = { kept: [], evicted: [] };
  const large = [{ payload: new Uint8Array(100_000) }];
  for (let sequence = 0; sequence < batches; sequence++) {
    for (const topic of topics) {
      const answer = await kafka.produce(topic, batchOf(sequence));
      t.equal(answer.errorCode, kafkaErrorCode.none);
      first[topic]!.push(answer.baseOffset);
      // Producer 40's batches among others' large ones: segments roll between them.
      for (let i = 0; i < 4; i++) await http.produce("kafka", topic, large, 0);
    }
  }
  // Of "kept", one roll more: the newest snapshot is the first after producer 40's last batch, and the
  // one before it is older than that batch. Of "evicted", enough for its batches' segments to leave.
  const segmentsOf = async (topic: string) =>
    ((await http.partition("kafka", topic, 0)) as { segments: unknown[] }).segments.length;
  const segmentsAtLast = await segmentsOf("kept");
  for (let i = 0; i < 20 && await segmentsOf("kept") === segmentsAtLast; i++) {
    await http.produce("kafka", "kept", large, 0);
  }
  t.equal(await segmentsOf("kept"), segmentsAtLast + 1, "kept rolled once after producer 40's last batch");
  for (let i = 0; i < 12; i++) await http.produce("kafka", "evicted", large, 0);
  await waitFor("producer 40's segments of topic evicted to be evicted", async () => {
    const p = await http.partition("kafka", "evicted", 0) as {
      segments: { start_offset: number; end_offset: number; location: string }[];
    };
    return p.segments.filter((s) => s.start_offset <= first.evicted!.at(-1)!).every((s) =>
      s.location === "remote"
    );
  }, { deadlineMs: 60_000, pace: realTime(100) });

  const producersOf = () => Promise.all(topics.map((topic) => http.producers("kafka", topic, 0)));
  const before = await producersOf();
  t.equal((before[0]!.producers as unknown[]).length, 1, "producer 40 on each topic");
  const restart = async (what: string, between: () => void = () => {}) => {
    kafka.close();
    t.equal(await server.stop("SIGKILL"), null, `SIGKILLed (${what})`);
    between();
    server = await spawnServer(["--config", config]);
    http = new StrataClient({ baseUrl: server.baseUrl, encoding: "msgpack" });
    kafka = await kafkaOf(server);
    t.same(await producersOf(), before, `the same producers' state after the boot (${what})`);
  };
  const retriesAreDuplicates = async (sequences: number[], what: string) => {
    for (const topic of topics) {
      const next = (await http.partition("kafka", topic, 0) as { next_offset: number }).next_offset;
      for (const sequence of sequences) {
        t.same(
          await kafka.produce(topic, batchOf(sequence)),
          { index: 0, errorCode: kafkaErrorCode.none, baseOffset: first[topic]![sequence] },
          `${topic}: a retry of sequence ${sequence} is answered with its first offset (${what})`,
        );
      }
      t.equal((await http.partition("kafka", topic, 0) as { next_offset: number }).next_offset, next);
    }
  };

  await restart("the newest snapshot");
  await retriesAreDuplicates([7, 3], "the newest snapshot");

  const keptId = (await http.getTopic("kafka", "kept")).id;
  await restart("an older snapshot", () => {
    const snapshots = filesUnder(join(dir, "data")).filter((f) =>
      f.includes(`/topics/${keptId}/`) && f.endsWith(".producers")
    ).sort();
    t.ok(snapshots.length >= 2, `${snapshots.length} snapshots of kept`);
    rmSync(snapshots.at(-1)!);
  });
  await retriesAreDuplicates([7, 4], "an older snapshot");
  for (const topic of topics) {
    const next = (await http.partition("kafka", topic, 0) as { next_offset: number }).next_offset;
    t.same(
      await kafka.produce(topic, batchOf(batches)),
      { index: 0, errorCode: kafkaErrorCode.none, baseOffset: next },
      `${topic}: the next batch goes on at the next offset`,
    );
  }
});
