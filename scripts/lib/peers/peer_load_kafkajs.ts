import { Buffer } from "node:buffer";
import { Kafka, logLevel } from "kafkajs";
import {
  Latencies,
  type LoadArgs,
  loadArgs,
  type LoadResult,
  ownCpuMs,
  PayloadMaker,
  RecordCheck,
  runProducers,
  SendWindow,
} from "./peer_load.ts";

/**
 * bench:peers's load for a Kafka broker with kafkajs, the JavaScript client: each producer a client
 * of its own sending batches of `batchRecords` with acks 1, at most `window` records unacknowledged;
 * consuming through a consumer group of its own, from the beginning, batch by batch.
 * Usage: `deno run -A peer_load_kafkajs.ts '<LoadArgs as JSON>'`.
 */

const topic = "bench";
/** Records one produce request carries. */
const batchRecords = 100;
const consumeDeadlineMs = 300_000;

const kafkaOf = (args: LoadArgs) =>
  new Kafka({ clientId: "bench-peers", brokers: args.address.split(","), logLevel: logLevel.NOTHING });

async function produce(args: LoadArgs): Promise<LoadResult> {
  return await runProducers(args, (i, deadline, latencies) => producer(args, i, deadline, latencies));
}

async function producer(
  args: LoadArgs,
  index: number,
  deadline: number,
  latencies: Latencies,
): Promise<number> {
  const client = kafkaOf(args).producer({ allowAutoTopicCreation: false });
  await client.connect();
  const window = new SendWindow(Math.max(1, Math.floor(args.window / batchRecords)));
  const payloads = new PayloadMaker(index, args.payloadBytes);
  const partition = index % args.partitions;
  let acknowledged = 0;
  let failed: unknown = null;
  for (let seq = 0; performance.now() < deadline && failed === null; seq += batchRecords) {
    await window.acquire();
    const messages = Array.from({ length: batchRecords }, (_, i) => ({
      partition,
      value: Buffer.from(payloads.make(seq + i).buffer),
    }));
    const sentAt = performance.now();
    client.send({ topic, acks: 1, messages }).then(() => {
      acknowledged += batchRecords;
      const ms = performance.now() - sentAt;
      for (let i = 0; i < batchRecords; i++) latencies.add(ms);
    }, (error) => (failed ??= error)).finally(() => window.release());
  }
  await window.drained();
  await client.disconnect();
  if (failed !== null) throw new Error(`Cannot produce with kafkajs: ${String(failed)}`, { cause: failed });
  return acknowledged;
}

async function consume(args: LoadArgs): Promise<LoadResult> {
  const check = new RecordCheck(args.acknowledged!, args.payloadBytes, args.window);
  const consumer = kafkaOf(args).consumer({
    groupId: `bench-peers-${Date.now()}`,
    maxBytes: 50 * 1024 * 1024,
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const started = performance.now();
  let finish: () => void = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));
  await consumer.run({
    autoCommit: false,
    eachBatch: ({ batch }) => {
      for (const message of batch.messages) check.take(message.value!);
      if (check.records >= check.expectedRecords) finish();
      return Promise.resolve();
    },
  });
  const timer = setTimeout(finish, consumeDeadlineMs);
  if (check.expectedRecords > 0) await finished;
  clearTimeout(timer);
  const seconds = (performance.now() - started) / 1000;
  await consumer.disconnect();
  const verdict = check.verdict();
  if (verdict !== null) throw new Error(`Cannot consume with kafkajs: ${verdict}`);
  return { records: check.records, bytes: check.bytes, seconds, cpuMs: ownCpuMs() };
}

const args = loadArgs();
console.log(JSON.stringify(args.mode === "produce" ? await produce(args) : await consume(args)));
Deno.exit(0);
