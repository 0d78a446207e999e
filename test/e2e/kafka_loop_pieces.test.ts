import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { kafkaErrorCode } from "../../src/kafka/kafka_errors.ts";
import { apiKey } from "../../src/kafka/wire/frame_codec.ts";
import { encodeRecordBatch, validateRecordBatch } from "../../src/log/batch/record_batch.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { configCopy } from "../helpers/config_copy.ts";
import {
  fetchBody,
  kafkaRequest,
  KafkaWireClient,
  metadataBody,
  produceBody,
  readFetchAnswer,
  readProduceAnswer,
} from "../helpers/kafka/kafka_wire.ts";
import { kafkaAddressOf } from "../helpers/kafka/kcat.ts";
import { spawnServer } from "../helpers/spawn_server.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

// A large produce and a large fetch through the real server's Kafka listener never hold its loop for
// much more than one piece: the tick's own lateness gauge (reset by each scrape) is read after each,
// and compared with the time the same CPU work takes when it is not cut into pieces.
const batchesPerRequest = 32;
const recordsPerBatch = 1000;
const valueBytes = 1000;
const roundsCount = 7;

function batchOf(n: number): Uint8Array {
  const records = Array.from({ length: recordsPerBatch }, (_, i) => ({
    offsetDelta: i,
    timestampDelta: 0,
    key: null,
    value: new Uint8Array(valueBytes).fill((n + i) & 0xff),
    headers: [],
  }));
  const ts = 1_700_000_000_000 + n;
  return encodeRecordBatch(records, {
    baseOffset: 0,
    baseTimestampMs: ts,
    maxTimestampMs: ts,
    timestampType: "create_time",
  });
}

/** The next answer, after its correlation id. */
async function answerAfterId(client: KafkaWireClient) {
  const reader = (await client.next(60_000))!;
  reader.int32();
  return reader;
}

/** The longest tick lateness of any shard since the last scrape, in ms; the scrape resets it. */
async function latenessMaxMs(baseUrl: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const values = [...text.matchAll(/^strata_pump_tick_lateness_max_seconds\{[^}]*\} ([0-9.e+-]+)$/gm)];
  if (values.length === 0) throw new Error("no strata_pump_tick_lateness_max_seconds in /metrics");
  return Math.max(...values.map((m) => Number(m[1]) * 1000));
}

/** Ticks every shard has fired, from `/health` (which, unlike a scrape, resets nothing). */
async function ticksFired(baseUrl: string): Promise<number> {
  const health = await (await fetch(`${baseUrl}/health`)).json() as { shards: { ticks: number }[] };
  return Math.min(...health.shards.map((s) => s.ticks));
}

/**
 * Waits until every shard's tick has fired `ticks` more times (a deadline of 10 s), then answers the
 * worst lateness since the last scrape: a window that is sure to hold ticks after the work.
 */
async function tickWindow(baseUrl: string, ticks: number): Promise<number> {
  const target = (await ticksFired(baseUrl)) + ticks;
  await waitFor(
    `every shard's tick to fire ${ticks} times`,
    async () => (await ticksFired(baseUrl)) >= target,
    {
      deadlineMs: 10_000,
      pace: realTime(20),
    },
  );
  return await latenessMaxMs(baseUrl);
}

t.test("a 32 MiB produce and a 32 MiB fetch hold the tick for about one piece, not for all of it", async (t) => {
  await initCrc32c();
  const batches = Array.from({ length: batchesPerRequest }, (_, n) => batchOf(n));
  const records = new Uint8Array(batches.reduce((n, b) => n + b.length, 0));
  batches.reduce((at, b) => (records.set(b, at), at + b.length), 0);
  // What the checks cost when they are not cut: every batch validated in one synchronous stretch.
  const unpiecedMs = Math.min(...Array.from({ length: 3 }, () => {
    const started = performance.now();
    for (const b of batches) validateRecordBatch(b);
    return performance.now() - started;
  }));
  const pieceMs = unpiecedMs / batchesPerRequest;

  const dir = mkdtempSync(join(tmpdir(), "strata-kafka-pieces-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const server = await spawnServer(["--config", configCopy(dir)]);
  t.teardown(() => server.stop("SIGKILL"));
  const port = Number(kafkaAddressOf(server.stderr()).split(":").at(-1));
  const client = await KafkaWireClient.connect(port);
  t.teardown(() => client.close());
  client.send(kafkaRequest(apiKey.metadata, 4, 1, metadataBody(4, ["pieces"])));
  t.ok(await client.next());
  // A warm-up round trip, so the figures are of the steady state, not of the first compilation.
  client.send(kafkaRequest(apiKey.produce, 7, 2, produceBody("pieces", 0, batches[0]!)));
  (await client.next(60_000))!.int32();
  client.send(kafkaRequest(apiKey.fetch, 11, 3, fetchBody("pieces", 0, 0, 0, 2 << 20)));
  t.ok(await client.next(60_000));

  const rounds: { idleMs: number; produceMs: number; fetchMs: number }[] = [];
  for (let round = 0; round < roundsCount; round++) {
    const idleMs = await tickWindow(server.baseUrl, 50);
    await latenessMaxMs(server.baseUrl);
    client.send(kafkaRequest(apiKey.produce, 7, 100 + round, produceBody("pieces", 0, records)));
    const produced = readProduceAnswer(await answerAfterId(client), 7);
    t.equal(produced.errorCode, kafkaErrorCode.none, `round ${round}: the 32 MiB produce is appended`);
    const produceMs = await tickWindow(server.baseUrl, 20);
    await latenessMaxMs(server.baseUrl);
    const offset = 1 + round * batchesPerRequest * recordsPerBatch;
    client.send(kafkaRequest(apiKey.fetch, 11, 200 + round, fetchBody("pieces", 0, offset, 0, 64 << 20)));
    const fetched = readFetchAnswer(await answerAfterId(client));
    t.ok(
      fetched.errorCode === kafkaErrorCode.none && fetched.records.length >= records.length,
      `round ${round}: ${fetched.records.length} bytes fetched`,
    );
    const fetchMs = await tickWindow(server.baseUrl, 20);
    rounds.push({ idleMs, produceMs, fetchMs });
  }
  const median = (key: "idleMs" | "produceMs" | "fetchMs") =>
    rounds.map((r) => r[key]).sort((a, b) => a - b)[Math.floor(rounds.length / 2)]!;
  const round2 = (v: number) => Math.round(v * 10) / 10;
  t.comment(
    JSON.stringify({
      unpiecedMs: round2(unpiecedMs),
      pieceMs: round2(pieceMs),
      rounds: rounds.map((r) => [round2(r.idleMs), round2(r.produceMs), round2(r.fetchMs)]),
    }),
  );
  // Done in one stretch, the checks alone would make the tick at least `unpiecedMs` late; in pieces,
  // the tick waits for one piece, the socket chunks around it and a young-generation collection.
  // Single windows can hold an old-generation collection, so the median of the rounds is judged.
  const boundMs = unpiecedMs / 2;
  t.ok(median("idleMs") < boundMs / 2, `idle: the tick is ${round2(median("idleMs"))} ms late (median)`);
  t.ok(
    median("produceMs") <= boundMs,
    `produce: ${round2(median("produceMs"))} ms (median), under ${round2(boundMs)}`,
  );
  t.ok(
    median("fetchMs") <= boundMs,
    `fetch: ${round2(median("fetchMs"))} ms (median), under ${round2(boundMs)}`,
  );
});
