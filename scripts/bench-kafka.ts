import { librdkafkaPython, librdkafkaUnavailable } from "./lib/librdkafka_python.ts";
import { parseArgs } from "node:util";
import { startServerProcess } from "./lib/server_process.ts";

/**
 * Produce and consume through the Kafka listener with a librdkafka client (Debian's
 * python3-confluent-kafka, run by /usr/bin/python3), against a null broker (the same Kafka protocol
 * code answering without storing: the ceiling of the machine it runs on), for fsync "interval" and "always",
 * and beside the HTTP path (`bench:produce`, run back to back).
 *
 *   deno task bench:kafka [--records 50000] [--producers 4] [--seconds 10] [--quick] [--json PATH]
 *
 * Each of `--producers` producers writes `--records` records of 1 KiB to its own partition (acks 1,
 * linger 5 ms, batches up to 1 MiB); then one consumer per partition reads them back from offset 0
 * by assignment. Throughput is the records' bytes over the slowest process's time. The same runs
 * with idempotent producers (`enable.idempotence`, acks all) measure what idempotence costs, and with
 * transactional producers (a commit every 100 ms), read back with read_uncommitted and with
 * read_committed, what transactions cost. Targets: with fsync "interval", produce at least 0.5 × and
 * consume at least 0.7 × the null broker, both at least 2 × the HTTP path's figures, idempotent
 * produce at least 0.95 × and transactional produce at least 0.85 × plain produce, and read_committed
 * consume at least 0.95 × read_uncommitted over the transactional records.
 */

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    records: { type: "string" },
    producers: { type: "string", default: "4" },
    seconds: { type: "string", default: "10" },
    quick: { type: "boolean", default: false },
    json: { type: "string" },
  },
});
const quick = args.quick!;
const records = Number(args.records ?? (quick ? 3000 : 50_000));
const producers = Number(args.producers);
const valueBytes = 1024;
const python = librdkafkaPython;
const loadScript = new URL("./lib/kafka_load.py", import.meta.url).pathname;

interface Phase {
  mb_s: number;
  records_s: number;
  p50_ms?: number;
  p99_ms?: number;
  transactions?: number;
}

interface Run {
  produce: Phase;
  consume: Phase;
  /** Transactional runs only: the same records read with read_committed (`consume` is read_uncommitted). */
  consume_read_committed?: Phase;
}

type ProducerKind = "plain" | "idempotent" | "transactional";
type Isolation = "read_uncommitted" | "read_committed";

interface LoadResult {
  records: number;
  bytes: number;
  seconds: number;
  p50_ms?: number;
  p99_ms?: number;
  transactions?: number;
}

async function load(mode: "produce" | "consume", broker: string, partition: number, variant: string) {
  const extra = mode === "produce" ? [String(valueBytes), variant] : [variant];
  const out = await new Deno.Command(python, {
    args: [loadScript, mode, broker, "bench", String(partition), String(records), ...extra],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) throw new Error(`Cannot ${mode}: ${new TextDecoder().decode(out.stderr).slice(-2000)}`);
  return JSON.parse(text) as LoadResult;
}

/** One process per partition side by side, `variant` their producer kind or isolation level; the slowest sets the time. */
async function phase(mode: "produce" | "consume", broker: string, variant: string): Promise<Phase> {
  const results = await Promise.all(
    Array.from({ length: producers }, (_, p) => load(mode, broker, p, variant)),
  );
  const seconds = Math.max(...results.map((r) => r.seconds));
  const bytes = results.reduce((n, r) => n + r.bytes, 0);
  const count = results.reduce((n, r) => n + r.records, 0);
  const phase: Phase = { mb_s: round(bytes / 1e6 / seconds), records_s: Math.round(count / seconds) };
  if (mode === "produce") {
    phase.p50_ms = round(median(results.map((r) => r.p50_ms!)));
    phase.p99_ms = round(Math.max(...results.map((r) => r.p99_ms!)));
  }
  if (variant === "transactional") {
    phase.transactions = results.reduce((n, r) => n + (r.transactions ?? 0), 0);
  }
  return phase;
}

/** Every producer, then every consumer (transactional runs: read_uncommitted, then read_committed). */
async function measure(broker: string, kind: ProducerKind = "plain"): Promise<Run> {
  const produce = await phase("produce", broker, kind);
  const run: Run = {
    produce,
    consume: await phase("consume", broker, "read_uncommitted" satisfies Isolation),
  };
  if (kind === "transactional") {
    run.consume_read_committed = await phase("consume", broker, "read_committed" satisfies Isolation);
  }
  return run;
}

async function nullBroker(): Promise<Run> {
  const child = new Deno.Command("deno", {
    args: [
      "run",
      "-A",
      new URL("./lib/null_kafka_broker.ts", import.meta.url).pathname,
      "--partitions",
      String(producers),
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  while (!/listening on (\S+)/.test(seen)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the null broker exited: ${seen}`);
    seen += value;
  }
  try {
    return await measure(/listening on (\S+)/.exec(seen)![1]!);
  } finally {
    child.kill("SIGTERM");
    await child.status;
  }
}

async function strata(fsync: "always" | "interval", kind: ProducerKind = "plain"): Promise<Run> {
  const dir = await Deno.makeTempDir({ prefix: "strata-bench-kafka-" });
  const config = `${dir}/config.toml`;
  await Deno.writeTextFile(config, "");
  const server = await startServerProcess(config, 60_000, {
    STRATA_SYSTEM_PATH: `${dir}/data`,
    STRATA_SYSTEM_FSYNC: fsync,
    STRATA_HTTP_ADDRESS: "127.0.0.1:0",
  });
  try {
    const post = (path: string, body: unknown) =>
      fetch(`${server.baseUrl}${path}`, { method: "POST", body: JSON.stringify(body) });
    await (await post("/streams", { name: "kafka" })).body?.cancel();
    const created = await post("/streams/kafka/topics", {
      name: "bench",
      partitions: producers,
      segment_size: "256 MiB",
      tiered: false,
    });
    if (created.status !== 201) throw new Error(`Cannot create the topic: ${await created.text()}`);
    const broker = /"msg":"kafka listening","address":"([^"]+)"/.exec(server.stderrTail())?.[1];
    if (broker === undefined) throw new Error("the server logged no Kafka address");
    return await measure(broker, kind);
  } finally {
    await server.stop("SIGTERM");
    await Deno.remove(dir, { recursive: true });
  }
}

/** `bench:produce`'s fsync "interval" figures, run now. */
async function http(): Promise<{ produce_mb_s: number; consume_mb_s: number }> {
  const json = await Deno.makeTempFile({ suffix: ".json" });
  const out = await new Deno.Command("deno", {
    args: ["task", "bench:produce", "--seconds", quick ? "2" : args.seconds!, "--json", json],
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`Cannot run bench:produce: ${new TextDecoder().decode(out.stderr).slice(-2000)}`);
  }
  const result = JSON.parse(await Deno.readTextFile(json));
  await Deno.remove(json);
  return {
    produce_mb_s: result.fsync.interval.produce.mb_s,
    consume_mb_s: result.fsync.interval.consume.mb_s,
  };
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

const unavailable = await librdkafkaUnavailable();
if (unavailable !== null) {
  console.log(`bench:kafka skipped: ${unavailable}`);
  Deno.exit(0);
}
const ceiling = await nullBroker();
const interval = await strata("interval");
const always = await strata("always");
const idempotent = await strata("interval", "idempotent");
const transactional = await strata("interval", "transactional");
const httpPath = await http();
const ratios = {
  produce_vs_null: round(interval.produce.mb_s / ceiling.produce.mb_s),
  consume_vs_null: round(interval.consume.mb_s / ceiling.consume.mb_s),
  produce_vs_http: round(interval.produce.mb_s / httpPath.produce_mb_s),
  consume_vs_http: round(interval.consume.mb_s / httpPath.consume_mb_s),
  idempotent_vs_plain: round(idempotent.produce.mb_s / interval.produce.mb_s),
  transactional_vs_plain: round(transactional.produce.mb_s / interval.produce.mb_s),
  transactional_vs_idempotent: round(transactional.produce.mb_s / idempotent.produce.mb_s),
  read_committed_vs_uncommitted: round(
    transactional.consume_read_committed!.mb_s / transactional.consume.mb_s,
  ),
};
/** Each ratio's target; `transactional_vs_idempotent` has none: it tells what the commits cost alone. */
const targets: Partial<Record<keyof typeof ratios, boolean>> = {
  produce_vs_null: ratios.produce_vs_null >= 0.5,
  consume_vs_null: ratios.consume_vs_null >= 0.7,
  produce_vs_http: ratios.produce_vs_http >= 2,
  consume_vs_http: ratios.consume_vs_http >= 2,
  idempotent_vs_plain: ratios.idempotent_vs_plain >= 0.95,
  transactional_vs_plain: ratios.transactional_vs_plain >= 0.85,
  read_committed_vs_uncommitted: ratios.read_committed_vs_uncommitted >= 0.95,
};
const row = (name: string, r: Run) =>
  `${name.padEnd(24)} produce ${String(r.produce.mb_s).padStart(8)} MB/s ${
    String(r.produce.records_s).padStart(8)
  } rec/s` +
  `  p50 ${r.produce.p50_ms} ms  p99 ${r.produce.p99_ms} ms   consume ${
    String(r.consume.mb_s).padStart(8)
  } MB/s`;
console.log(row("null broker", ceiling));
console.log(row("strata fsync=interval", interval));
console.log(row("strata fsync=always", always));
console.log(row("strata idempotent", idempotent));
console.log(row("strata transactional", transactional));
console.log(
  `${"".padEnd(24)} ${transactional.produce.transactions} transactions committed; consume read_committed ${
    String(transactional.consume_read_committed!.mb_s).padStart(8)
  } MB/s`,
);
console.log(
  `http path (bench:produce, fsync=interval): produce ${httpPath.produce_mb_s} MB/s, consume ${httpPath.consume_mb_s} MB/s`,
);
const verdict = (met: boolean | undefined) => met === undefined ? "(no target)" : met ? "met" : "MISSED";
for (const [name, value] of Object.entries(ratios)) {
  console.log(`${name.padEnd(30)} ${value.toFixed(2)}  ${verdict(targets[name as keyof typeof ratios])}`);
}
const result = {
  settings: { records_per_producer: records, producers, value_bytes: valueBytes, quick },
  null_broker: ceiling,
  strata: { interval, always, idempotent, transactional },
  http: httpPath,
  ratios,
  targets,
};
if (args.json) await Deno.writeTextFile(args.json, JSON.stringify(result, null, 2) + "\n");
