import { Buffer } from "node:buffer";
import { createRequire } from "node:module";
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
 * bench:peers's load for RabbitMQ streams, with `rabbitmq-stream-js-client`: a stream per partition
 * (`bench-0` ...), a publisher per producer on a connection of its own, each record counted once its
 * publish is confirmed. Consuming reads every stream from its first offset. RabbitMQ 3.10 does not
 * know the command-version exchange this client (1.0) always sends, and closes the connection: for
 * servers before 3.11 the exchange is skipped, as clients of that time did.
 * Usage: `deno run -A peer_load_rabbitmq.ts '<LoadArgs as JSON>'`.
 */

const require = createRequire(import.meta.url);
const { Connection } = require("rabbitmq-stream-js-client/dist/connection.js");
const exchangeCommandVersions = Connection.prototype.exchangeCommandVersions;
Connection.prototype.exchangeCommandVersions = function (this: { peerProperties?: { version?: string } }) {
  const version = this.peerProperties?.version ?? "";
  if (/^3\.([0-9]|10)\./.test(version)) return Promise.resolve(true);
  return exchangeCommandVersions.call(this);
};
const rabbit = require("rabbitmq-stream-js-client");

const consumeDeadlineMs = 300_000;

// deno-lint-ignore no-explicit-any
type StreamClient = any;

function clientOf(args: LoadArgs): Promise<StreamClient> {
  const [hostname, port] = args.address.split(":");
  return rabbit.connect({ hostname, port: Number(port), username: "guest", password: "guest", vhost: "/" });
}

const streamOf = (partition: number) => `bench-${partition}`;

async function produce(args: LoadArgs): Promise<LoadResult> {
  const setup = await clientOf(args);
  for (let p = 0; p < args.partitions; p++) {
    // A round starts from an empty stream.
    await setup.deleteStream({ stream: streamOf(p) }).catch(() => false);
    await setup.createStream({ stream: streamOf(p), arguments: {} });
  }
  await setup.close();
  return await runProducers(args, (i, deadline, latencies) => producer(args, i, deadline, latencies));
}

/**
 * Records the client gathers into one publish frame (its `maxChunkLength`). Sub-entry batches would
 * publish faster, but this client's 1.0 decoder reads only the first sub-entry batch of each chunk
 * it is sent, so records published that way cannot all be read back with it.
 */
const recordsPerFrame = 100;

/**
 * One publisher on its own connection: sends record by record until `deadline`, each record's
 * publishing id its own, at most `window` records unconfirmed.
 */
async function producer(
  args: LoadArgs,
  index: number,
  deadline: number,
  latencies: Latencies,
): Promise<number> {
  const client = await clientOf(args);
  const publisher = await client.declarePublisher({
    stream: streamOf(index % args.partitions),
    maxChunkLength: recordsPerFrame,
  });
  const window = new SendWindow(args.window);
  const sentAt = new Map<bigint, number>();
  let acknowledged = 0;
  let failed = "";
  publisher.on("publish_confirm", (error: unknown, ids: bigint[]) => {
    const now = performance.now();
    for (const id of ids) {
      const at = sentAt.get(id);
      if (at === undefined) continue;
      sentAt.delete(id);
      if (error !== null) failed ||= `publishing error ${String(error)}`;
      else {
        acknowledged += 1;
        latencies.add(now - at);
      }
      window.release();
    }
  });
  const payloads = new PayloadMaker(index, args.payloadBytes);
  for (let seq = 0; performance.now() < deadline && failed === ""; seq++) {
    await window.acquire();
    // The id `send` gives the record, noted first: its confirm may come before `send` resolves.
    const id: bigint = publisher.publishingId + 1n;
    sentAt.set(id, performance.now());
    const sent = await publisher.send(Buffer.from(payloads.make(seq).buffer));
    if (sent.publishingId !== id) {
      throw new Error(`Cannot produce to RabbitMQ: publishing id ${sent.publishingId}, not ${id}`);
    }
  }
  await publisher.flush();
  await window.drained();
  await client.close();
  if (failed !== "") throw new Error(`Cannot produce to RabbitMQ: ${failed}`);
  return acknowledged;
}

async function consume(args: LoadArgs): Promise<LoadResult> {
  const client = await clientOf(args);
  const check = new RecordCheck(args.acknowledged!, args.payloadBytes, args.window);
  const started = performance.now();
  let finish: () => void = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));
  for (let p = 0; p < args.partitions; p++) {
    await client.declareConsumer(
      { stream: streamOf(p), offset: rabbit.Offset.first() },
      (message: { content: Uint8Array }) => {
        check.take(message.content);
        if (check.records >= check.expectedRecords) finish();
      },
    );
  }
  const timer = setTimeout(finish, consumeDeadlineMs);
  if (check.expectedRecords > 0) await finished;
  clearTimeout(timer);
  const seconds = (performance.now() - started) / 1000;
  await client.close();
  const verdict = check.verdict();
  if (verdict !== null) throw new Error(`Cannot consume from RabbitMQ: ${verdict}`);
  return { records: check.records, bytes: check.bytes, seconds, cpuMs: ownCpuMs() };
}

const args = loadArgs();
console.log(JSON.stringify(args.mode === "produce" ? await produce(args) : await consume(args)));
Deno.exit(0);
