import { execFile } from "node:child_process";
import { Kafka, logLevel, type Producer } from "kafkajs";
import { StrataClient } from "../../../src/client/strata_client.ts";
import type { ConsumerHistory, PolledRecord, SendOutcome, SendRecord } from "../log_history.ts";

/**
 * The clients of a fault campaign, each a real client of the cluster that records what it did:
 * producers (kafkajs, acks=all, one send at a time and never retried, so that every value is sent
 * once) and consumers (kcat over Kafka, the TypeScript client over HTTP) that poll one partition
 * from where they left off.
 */

/** A Kafka error a partition's leader answers before it writes anything: the send definitely failed. */
const refusedBeforeWriteTypes = new Set([
  "NOT_LEADER_FOR_PARTITION",
  "NOT_ENOUGH_REPLICAS",
  "UNKNOWN_TOPIC_OR_PARTITION",
]);

/** Nested errors followed at most when looking for a Kafka error type. */
const causeDepthMax = 8;

/**
 * How a send that threw ended: "failed" only for a refusal the leader gives before it appends
 * (another node leads; too few in sync); anything else (a timeout, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
 * a lost connection, a leader that stepped down while waiting) may have written it: "unknown".
 */
export function sendOutcomeOfError(error: unknown): "failed" | "unknown" {
  let current: unknown = error;
  for (let depth = 0; depth < causeDepthMax && current instanceof Error; depth++) {
    const type = (current as { type?: unknown }).type;
    if (typeof type === "string") return refusedBeforeWriteTypes.has(type) ? "failed" : "unknown";
    current = current.cause;
  }
  return "unknown";
}

/** Records of kcat's `%o %s\n` output; a last line without its newline (a kcat cut short) is left out. */
export function parsePolledLines(text: string): PolledRecord[] {
  const complete = text.slice(0, text.lastIndexOf("\n") + 1);
  return complete.split("\n").filter((l) => l !== "").map((line) => {
    const space = line.indexOf(" ");
    return { offset: Number(line.slice(0, space)), value: line.slice(space + 1) };
  });
}

/** Runs kcat, killed after `timeoutMs`; resolves with whatever it wrote, even when it failed. */
export function runKcat(
  args: string[],
  timeoutMs: number,
): Promise<{ ok: boolean; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const options = { timeout: timeoutMs, maxBuffer: 256 * 1024 * 1024, killSignal: "SIGKILL" as const };
    const child = execFile("kcat", args, options, (error, stdout, stderr) => {
      resolve({ ok: error === null, stdout: String(stdout), stderr: String(stderr) });
    });
    child.stdin?.end();
  });
}

export interface CampaignTarget {
  bootstrap: string;
  httpUrls: string[];
  topic: string;
  /** Bytes of padding after each value's name, so that segments fill (a tiered topic); 0: none. */
  valuePaddingBytes: number;
  /** Stops the loops when it returns true. */
  done: () => boolean;
}

/** Milliseconds a client waits for one answer: past it, a send is unknown and a poll is retried. */
export const clientRequestTimeoutMs = 3000;
/** Consecutive sends without an acknowledgement after which a producer is connected anew. */
const reconnectAfterFailures = 5;
/** Milliseconds between one poll that found nothing, or one send, and the next. */
const pollIdleMs = 50;
const sendGapMs = 2;

function newProducer(name: string, bootstrap: string): Producer {
  const kafka = new Kafka({
    clientId: `campaign-${name}`,
    brokers: bootstrap.split(","),
    logLevel: logLevel.NOTHING,
    requestTimeout: clientRequestTimeoutMs,
    connectionTimeout: 1000,
    retry: { retries: 0 },
  });
  return kafka.producer({ allowAutoTopicCreation: false, retry: { retries: 0 } });
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function sendOnce(producer: Producer, topic: string, value: string): Promise<SendOutcome> {
  try {
    const [result] = await producer.send({
      topic,
      acks: -1,
      timeout: clientRequestTimeoutMs - 1000,
      messages: [{ partition: 0, value }],
    });
    return { kind: "acked", offset: Number(result!.baseOffset) };
  } catch (error) {
    return { kind: sendOutcomeOfError(error) };
  }
}

/** One producer: values `<name>-0`, `<name>-1`, … each sent once, until `target.done()`. */
export async function runProducer(name: string, target: CampaignTarget, sends: SendRecord[]): Promise<void> {
  let producer = newProducer(name, target.bootstrap);
  await producer.connect().catch(() => {});
  let unacked = 0;
  const padding = ".".repeat(target.valuePaddingBytes);
  for (let n = 0; !target.done(); n++) {
    const value = `${name}-${n}${padding}`;
    const outcome = await sendOnce(producer, target.topic, value);
    sends.push({ value, outcome });
    unacked = outcome.kind === "acked" ? 0 : unacked + 1;
    if (unacked >= reconnectAfterFailures) {
      // kafkajs without retries can keep a dead leader's metadata: a new producer asks afresh.
      await producer.disconnect().catch(() => {});
      producer = newProducer(name, target.bootstrap);
      await producer.connect().catch(() => {});
      unacked = 0;
    }
    await pause(outcome.kind === "acked" ? sendGapMs : pollIdleMs);
  }
  await producer.disconnect().catch(() => {});
}

/** Records polled at most at once. */
const pollCountMax = 200;

/** A consumer through kcat: each poll a kcat that reads from the next offset to the high watermark. */
export async function runKcatConsumer(target: CampaignTarget, history: ConsumerHistory): Promise<void> {
  let next = 0;
  while (!target.done()) {
    const args = ["-C", "-b", target.bootstrap, "-t", target.topic, "-p", "0", "-o", String(next)];
    args.push("-c", String(pollCountMax), "-e", "-q", "-f", "%o %s\\n");
    args.push("-X", "topic.auto.offset.reset=error");
    const polled = parsePolledLines((await runKcat(args, clientRequestTimeoutMs)).stdout);
    if (polled.length > 0) {
      history.polls.push(polled);
      next = polled.at(-1)!.offset + 1;
    } else await pause(pollIdleMs);
  }
}

/** A consumer through the TypeScript client over HTTP, asking the nodes in turn (a follower redirects). */
export async function runHttpConsumer(target: CampaignTarget, history: ConsumerHistory): Promise<void> {
  const clients = target.httpUrls.map((baseUrl) =>
    new StrataClient({
      baseUrl,
      fetch: (request) => fetch(request, { signal: AbortSignal.timeout(clientRequestTimeoutMs) }),
    })
  );
  let next = 0;
  for (let turn = 0; !target.done(); turn++) {
    const client = clients[turn % clients.length]!;
    const answer = await client.poll("kafka", target.topic, 0, { offset: next, count: pollCountMax })
      .catch(() => null);
    const polled = (answer?.messages ?? []).map((m) => ({
      offset: m.offset,
      value: new TextDecoder().decode(m.payload ?? new Uint8Array()),
    }));
    if (polled.length > 0) {
      history.polls.push(polled);
      next = polled.at(-1)!.offset + 1;
    } else await pause(pollIdleMs);
  }
}

/** The partition from offset 0 to its high watermark, read through kcat; throws when kcat fails. */
export async function readWholePartition(bootstrap: string, topic: string): Promise<PolledRecord[]> {
  const args = ["-C", "-b", bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q"];
  args.push("-f", "%o %s\\n");
  const read = await runKcat(args, 60_000);
  if (!read.ok) throw new Error(`Cannot read ${topic} whole: ${read.stderr.trim()}`);
  return parsePolledLines(read.stdout);
}
