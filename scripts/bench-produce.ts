import { parseArgs } from "node:util";
import * as hdr from "hdr-histogram-js";
import { Packr } from "msgpackr";
import { serverTask } from "./lib/server_task.ts";

/**
 * Produce and consume throughput through HTTP, for each fsync policy, against the HTTP ceiling of
 * the machine it runs on (an empty Deno.serve handler that only reads the body and answers).
 *
 *   deno task bench:produce [--seconds 10] [--producers 8] [--partitions 4] [--encoding msgpack|json] [--json PATH]
 *
 * The topic is created untiered: this measures the log's produce and consume path (tiering's cost
 * on the loop is the pump benchmark's subject). Messages are 1 KiB, in batches of 100. Each server runs as its own process on loopback; this
 * process only generates load, with request bodies built once and sent repeatedly.
 */

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    seconds: { type: "string", default: "10" },
    producers: { type: "string", default: "8" },
    partitions: { type: "string", default: "4" },
    encoding: { type: "string", default: "msgpack" },
    json: { type: "string" },
  },
});
const seconds = Number(args.seconds);
const producers = Number(args.producers);
const partitions = Number(args.partitions);
const encoding = args.encoding === "json" ? "json" : "msgpack";
const messageBytes = 1024;
const batchMessages = 100;
const packr = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true });
const contentType = encoding === "msgpack" ? "application/msgpack" : "application/json";

interface Child {
  baseUrl: string;
  process: Deno.ChildProcess;
}

async function startProcess(
  args: string[],
  pattern: RegExp,
  stream: "stdout" | "stderr",
  env: Record<string, string> = {},
): Promise<Child> {
  const process = new Deno.Command("deno", {
    args,
    env,
    stdout: stream === "stdout" ? "piped" : "null",
    stderr: stream === "stderr" ? "piped" : "null",
  }).spawn();
  const reader = (stream === "stdout" ? process.stdout : process.stderr).pipeThrough(new TextDecoderStream())
    .getReader();
  let seen = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`process exited before listening: ${seen}`);
    seen += value;
    const match = pattern.exec(seen);
    if (match) {
      // Keep draining so the child never blocks on a full pipe.
      (async () => {
        while (!(await reader.read()).done) { /* discard */ }
      })();
      return { baseUrl: `http://127.0.0.1:${match[1]}`, process };
    }
  }
}

async function stop(child: Child): Promise<void> {
  child.process.kill("SIGTERM");
  await child.process.status;
}

function produceBody(partition: number): Uint8Array<ArrayBuffer> {
  const payload = new Uint8Array(messageBytes);
  for (let i = 0; i < payload.length; i++) payload[i] = (i * 31 + partition) & 0xff;
  const messages = Array.from({ length: batchMessages }, () => ({
    payload: encoding === "msgpack" ? payload : btoa(String.fromCharCode(...payload)),
  }));
  const body = { partition, messages };
  // Copied once into a plain ArrayBuffer-backed array, the shape fetch bodies take.
  return new Uint8Array(
    encoding === "msgpack" ? packr.pack(body) : new TextEncoder().encode(JSON.stringify(body)),
  );
}

interface Throughput {
  mb_s: number;
  messages_s: number;
  latency_ms: { p50: number; p99: number };
  requests: number;
}

/** Runs `workers` loops of `request` for `seconds`; each request moves `messagesPer` messages. */
async function drive(workers: number, request: (worker: number) => Promise<number>): Promise<Throughput> {
  const histogram = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 60_000_000,
    numberOfSignificantValueDigits: 3,
  });
  let messages = 0;
  let requests = 0;
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(Array.from({ length: workers }, async (_, w) => {
    while (performance.now() < end) {
      const t0 = performance.now();
      const moved = await request(w);
      histogram.recordValue(Math.round((performance.now() - t0) * 1000));
      if (moved === 0) break;
      messages += moved;
      requests++;
    }
  }));
  const elapsed = (performance.now() - start) / 1000;
  return {
    mb_s: round((messages * messageBytes) / elapsed / 1e6),
    messages_s: Math.round(messages / elapsed),
    latency_ms: {
      p50: histogram.getValueAtPercentile(50) / 1000,
      p99: histogram.getValueAtPercentile(99) / 1000,
    },
    requests,
  };
}

const round = (x: number) => Math.round(x * 100) / 100;

async function post(url: string, body: Uint8Array<ArrayBuffer>, type = contentType): Promise<Response> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": type }, body });
  if (!response.ok) throw new Error(`POST ${url}: ${response.status} ${await response.text()}`);
  return response;
}

async function benchServer(fsync: "always" | "interval") {
  const dir = await Deno.makeTempDir({ prefix: "strata-bench-" });
  const config = await Deno.readTextFile("config.toml");
  await Deno.writeTextFile(
    `${dir}/config.toml`,
    config
      .replace('path = "./data"', `path = ${JSON.stringify(`${dir}/data`)}`)
      .replace('address = "127.0.0.1:8080"', 'address = "127.0.0.1:0"')
      .replace('address = "127.0.0.1:9092"', 'address = "127.0.0.1:0"')
      .replace('fsync = "always"', `fsync = "${fsync}"`),
  );
  const task = serverTask();
  const server = await startProcess(
    [...task.args, "--config", `${dir}/config.toml`],
    /"msg":"listening","address":"127\.0\.0\.1:(\d+)"/,
    "stderr",
    task.env,
  );
  try {
    const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
    await post(`${server.baseUrl}/streams`, json({ name: "bench" }), "application/json");
    await post(
      `${server.baseUrl}/streams/bench/topics`,
      json({ name: "t", partitions, segment_size: "256 MiB", tiered: false }),
      "application/json",
    );
    const bodies = Array.from({ length: partitions }, (_, p) => produceBody(p));
    const produceUrl = `${server.baseUrl}/streams/bench/topics/t/messages`;
    const produce = await drive(producers, async (w) => {
      const response = await post(produceUrl, bodies[w % partitions]!);
      await response.body?.cancel();
      return batchMessages;
    });
    const cursors = Array.from({ length: partitions }, () => 0);
    let capturedPoll: { body: Uint8Array<ArrayBuffer>; type: string } | null = null;
    const consume = await drive(partitions, async (w) => {
      const url = `${server.baseUrl}/streams/bench/topics/t/partitions/${w}/messages?offset=${
        cursors[w]
      }&count=${batchMessages}`;
      const response = await fetch(url, { headers: { accept: contentType } });
      const body = new Uint8Array(await response.arrayBuffer());
      const decoded =
        (encoding === "msgpack" ? packr.unpack(body) : JSON.parse(new TextDecoder().decode(body))) as {
          messages: unknown[];
          next_offset: number;
        };
      if (decoded.messages.length === batchMessages && capturedPoll === null) {
        capturedPoll = { body, type: response.headers.get("content-type") ?? contentType };
      }
      cursors[w] = decoded.next_offset;
      return decoded.messages.length;
    });
    return {
      produce,
      consume,
      capturedPoll: capturedPoll as { body: Uint8Array<ArrayBuffer>; type: string } | null,
    };
  } finally {
    await stop(server);
    await Deno.remove(dir, { recursive: true });
  }
}

async function benchCeiling(pollBody: { body: Uint8Array<ArrayBuffer>; type: string }) {
  const server = await startProcess(["run", "-A", "scripts/empty_server.ts"], /listening (\d+)/, "stdout");
  try {
    await fetch(server.baseUrl, {
      method: "PUT",
      headers: { "content-type": pollBody.type },
      body: pollBody.body,
    });
    const bodies = Array.from({ length: partitions }, (_, p) => produceBody(p));
    const produce = await drive(producers, async (w) => {
      const response = await post(
        `${server.baseUrl}/streams/bench/topics/t/messages`,
        bodies[w % partitions]!,
      );
      await response.body?.cancel();
      return batchMessages;
    });
    const consume = await drive(partitions, async (w) => {
      const response = await fetch(
        `${server.baseUrl}/streams/bench/topics/t/partitions/${w}/messages?count=100`,
        {
          headers: { accept: contentType },
        },
      );
      const body = new Uint8Array(await response.arrayBuffer());
      const decoded =
        (encoding === "msgpack" ? packr.unpack(body) : JSON.parse(new TextDecoder().decode(body))) as {
          messages: unknown[];
        };
      return decoded.messages.length;
    });
    return { produce, consume };
  } finally {
    await stop(server);
  }
}

const machine = {
  cpus: navigator.hardwareConcurrency,
  os: Deno.build.os,
  arch: Deno.build.arch,
  deno: Deno.version.deno,
  memory_gib: Math.round(Deno.systemMemoryInfo().total / 2 ** 30),
};
console.error(
  `bench:produce: ${seconds} s per phase, ${producers} producers, ${partitions} partitions, ${encoding}`,
);
const always = await benchServer("always");
const interval = await benchServer("interval");
const poll = interval.capturedPoll ?? always.capturedPoll;
if (poll === null) throw new Error("no full poll answer was captured to replay against the ceiling");
const ceiling = await benchCeiling(poll);

const ratio = (x: number, c: number) => round(x / c);
const result = {
  machine,
  settings: {
    seconds,
    producers,
    partitions,
    encoding,
    message_bytes: messageBytes,
    batch_messages: batchMessages,
  },
  ceiling,
  fsync: {
    always: { ...always, capturedPoll: undefined },
    interval: { ...interval, capturedPoll: undefined },
  },
  ratios: {
    always: {
      produce: ratio(always.produce.mb_s, ceiling.produce.mb_s),
      consume: ratio(always.consume.mb_s, ceiling.consume.mb_s),
    },
    interval: {
      produce: ratio(interval.produce.mb_s, ceiling.produce.mb_s),
      consume: ratio(interval.consume.mb_s, ceiling.consume.mb_s),
    },
  },
};

const row = (name: string, t: Throughput, c: Throughput) =>
  `${name.padEnd(26)} ${String(t.mb_s).padStart(8)} MB/s ${String(t.messages_s).padStart(9)} msg/s  p50 ${
    String(t.latency_ms.p50).padStart(7)
  } ms  p99 ${String(t.latency_ms.p99).padStart(7)} ms  ${ratio(t.mb_s, c.mb_s).toFixed(2)} × ceiling`;
console.log(row("ceiling produce", ceiling.produce, ceiling.produce));
console.log(row("fsync=always produce", always.produce, ceiling.produce));
console.log(row("fsync=interval produce", interval.produce, ceiling.produce));
console.log(row("ceiling consume", ceiling.consume, ceiling.consume));
console.log(row("fsync=always consume", always.consume, ceiling.consume));
console.log(row("fsync=interval consume", interval.consume, ceiling.consume));
const target = result.ratios.interval.produce >= 0.5 && result.ratios.interval.consume >= 0.5;
console.log(`target (fsync=interval produce and consume >= 0.5 × ceiling): ${target ? "met" : "MISSED"}`);
if (args.json) await Deno.writeTextFile(args.json, JSON.stringify(result, null, 2) + "\n");
