import { connect, createInbox, type NatsConnection, RetentionPolicy, StorageType } from "nats";
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
 * bench:peers's load for NATS JetStream, with the `nats` client's fastest publish path: raw
 * publishes whose reply subject receives JetStream's acknowledgement (a `js.publish()` awaits each
 * one and is several times slower here). One stream, `BENCH`, with a subject per partition
 * (`bench.0` ...); each producer has its own connection. Consuming reads the stream from its first
 * message with an ordered consumer. Usage: `deno run -A peer_load_nats.ts '<LoadArgs as JSON>'`.
 */

const streamName = "BENCH";
const consumeDeadlineMs = 300_000;

async function produce(args: LoadArgs): Promise<LoadResult> {
  const setup = await connect({ servers: args.address });
  const jsm = await setup.jetstreamManager();
  // A round starts from an empty stream.
  await jsm.streams.delete(streamName).catch(() => false);
  await jsm.streams.add({
    name: streamName,
    subjects: ["bench.*"],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
  });
  await setup.close();
  return await runProducers(args, (i, deadline, latencies) => producer(args, i, deadline, latencies));
}

/** One producer on its own connection: sends until `deadline`, at most `window` unacknowledged. */
async function producer(
  args: LoadArgs,
  index: number,
  deadline: number,
  latencies: Latencies,
): Promise<number> {
  const nc: NatsConnection = await connect({ servers: args.address });
  const subject = `bench.${index % args.partitions}`;
  const inbox = createInbox();
  const window = new SendWindow(args.window);
  /** Send times of the records not yet acknowledged (at most `window`). */
  const sentAt = new Map<number, number>();
  let acknowledged = 0;
  let failed = "";
  const text = new TextDecoder();
  nc.subscribe(`${inbox}.*`, {
    callback: (_error, msg) => {
      const seq = Number(msg.subject.slice(inbox.length + 1));
      const at = sentAt.get(seq);
      if (at === undefined) return;
      sentAt.delete(seq);
      const problem = pubAckProblem(text.decode(msg.data));
      if (problem !== null) failed ||= problem;
      else {
        acknowledged += 1;
        latencies.add(performance.now() - at);
      }
      window.release();
    },
  });
  const payloads = new PayloadMaker(index, args.payloadBytes);
  for (let seq = 0; performance.now() < deadline && failed === ""; seq++) {
    await window.acquire();
    sentAt.set(seq, performance.now());
    nc.publish(subject, payloads.make(seq), { reply: `${inbox}.${seq}` });
  }
  await window.drained();
  await nc.close();
  if (failed !== "") throw new Error(`Cannot produce to NATS: ${failed}`);
  return acknowledged;
}

/**
 * What is wrong with JetStream's answer to a publish, or null for an acknowledgement (`{"stream",
 * "seq"}`); an empty answer is a status (503: no stream took the subject).
 */
function pubAckProblem(answer: string): string | null {
  try {
    const ack = JSON.parse(answer);
    return typeof ack?.seq === "number" && ack.error === undefined ? null : `publish answered ${answer}`;
  } catch {
    return `publish answered ${JSON.stringify(answer)}, not an acknowledgement`;
  }
}

async function consume(args: LoadArgs): Promise<LoadResult> {
  const nc = await connect({ servers: args.address });
  const check = new RecordCheck(args.acknowledged!, args.payloadBytes, args.window);
  const started = performance.now();
  const consumer = await nc.jetstream().consumers.get(streamName);
  const messages = await consumer.consume({ max_messages: 1024 });
  const deadline = setTimeout(() => messages.stop(), consumeDeadlineMs);
  if (check.expectedRecords > 0) {
    for await (const message of messages) {
      check.take(message.data);
      if (check.records >= check.expectedRecords) break;
    }
  }
  clearTimeout(deadline);
  const seconds = (performance.now() - started) / 1000;
  await nc.close();
  const verdict = check.verdict();
  if (verdict !== null) throw new Error(`Cannot consume from NATS: ${verdict}`);
  return { records: check.records, bytes: check.bytes, seconds, cpuMs: ownCpuMs() };
}

const args = loadArgs();
console.log(JSON.stringify(args.mode === "produce" ? await produce(args) : await consume(args)));
