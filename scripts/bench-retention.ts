import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { StrataClient } from "../src/client/strata_client.ts";
import { initCrc32c } from "../src/runtime/checksum/crc32c.ts";
import { benchConfigText } from "./lib/bench_config.ts";
import { parsePrometheusText, sampleValue } from "./lib/prometheus_text.ts";
import { readProcess } from "./lib/proc_stats.ts";
import { type RemoteLayout, writeRemoteChain } from "./lib/remote_layout.ts";
import { measureReads, type ReadFigures } from "./lib/retention_reads.ts";
import { measureS3Reads, type S3ReadFigures } from "./lib/retention_s3_reads.ts";
import { librdkafkaUnavailable } from "./lib/librdkafka_python.ts";
import { type ServerProcess, startServerProcess } from "./lib/server_process.ts";
import { Rng } from "../src/runtime/rng.ts";
import { realTime, settlesWithin, waitFor } from "../test/helpers/wait_for.ts";

/**
 * What the bytes in the bucket cost a node (docs/BENCHMARKS.md, "Retention"). The real server runs
 * as its own process with `fs` tiering. For each case a tiered topic is created, the server stopped,
 * and each partition's tiered chain written straight into its directory and the bucket (objects,
 * indexes, the remote table; `scripts/lib/remote_layout.ts`); then the server boots on it and is
 * measured:
 *
 *   empty   the topic of `many`'s partitions with nothing in the bucket: the baseline of `many`
 *   small   one partition of 7 segments of 8 MiB in the bucket: the baseline of `big`
 *   big     one partition of 1,024 segments of 8 MiB (8 GiB) in the bucket
 *   many    100 partitions of 1,000 segments each (100,000 remote segments) of 16 KiB
 *
 * Each boot is timed from spawn to listening and to the first partition's answer, and the RSS read
 * once every partition answers. On `many`, one random offset of each partition is then read, and the
 * store's GETs and the index cache's fetches counted around the reads.
 *
 * Then the reads (`scripts/lib/retention_reads.ts`): 2 GB produced through Kafka into an untiered
 * topic and a tiered one whose local envelope is one segment, each read from offset 0 by a
 * librdkafka consumer: the untiered one (local), the tiered one once evicted with the chunk cache
 * emptied (cold), and again (warm).
 *
 *   deno task bench:retention [--quick] [--json PATH] [--dir PATH [--keep]]
 *
 * `--keep` leaves each case's directory (its config.toml and data) under `--dir` for a look after.
 * `--quick` shrinks the cases (big: 256 segments of 256 KiB; many: 8 partitions of 500 segments;
 * reads of 64 MB in 1 MiB segments) so a test can run it. The targets are judged on every run; a
 * full run that misses one exits with code 3 after printing which, a quick run exits 0 either way.
 */

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    quick: { type: "boolean", default: false },
    json: { type: "string" },
    dir: { type: "string" },
    keep: { type: "boolean", default: false },
  },
});
const quick = args.quick;
const MiB = 1024 * 1024;
const stream = "bench";
const topic = "t";
/** Deadlines: generous, since a layout of 100,000 segments boots slowly on code that reads per segment. */
const deadlinesMs = { listen: 300_000, request: 60_000 };

interface BootCase {
  name: "empty" | "small" | "big" | "many";
  partitions: number;
  layout: RemoteLayout | null;
}

const segment = (segments: number, segmentBytes: number): RemoteLayout => ({
  segments,
  segmentBytes,
  batchBytes: Math.min(16 * 1024, segmentBytes),
  recordBytes: 1000,
  indexIntervalBytes: 4096,
});
const manyPartitions = quick ? 8 : 100;
const cases: BootCase[] = [
  { name: "empty", partitions: manyPartitions, layout: null },
  { name: "small", partitions: 1, layout: segment(7, quick ? 256 * 1024 : 8 * MiB) },
  { name: "big", partitions: 1, layout: segment(quick ? 256 : 1024, quick ? 256 * 1024 : 8 * MiB) },
  { name: "many", partitions: manyPartitions, layout: segment(quick ? 500 : 1000, 16 * 1024) },
];

const dir = args.dir ?? mkdtempSync(join(tmpdir(), "strata-bench-retention-"));
const ownsDir = args.dir === undefined;

function progress(text: string): void {
  console.error(`bench:retention: ${text}`);
}

/**
 * A case's directory: its config.toml (port 0, its own data, a fixed cluster id, no merges: the
 * cases measure the chain they lay out, which an idle server's merger would change) and its data.
 */
function writeConfig(name: string): { configPath: string; dataPath: string } {
  const home = join(dir, name);
  mkdirSync(home, { recursive: true });
  const dataPath = join(home, "data");
  const shipped = readFileSync(new URL("../config.toml", import.meta.url), "utf8");
  const text = benchConfigText(shipped, dataPath, null)
    .replace(/^cluster_id = ""$/m, 'cluster_id = "bench"')
    .replace(/^merge_segments = true$/m, "merge_segments = false");
  const configPath = join(home, "config.toml");
  writeFileSync(configPath, text);
  return { configPath, dataPath };
}

const clientOf = (server: ServerProcess) =>
  new StrataClient({ baseUrl: server.baseUrl, encoding: "msgpack" });

/** Creates the tiered topic, stops the server, and writes each partition's chain. */
async function layOut(c: BootCase, configPath: string, dataPath: string): Promise<{ bucketBytes: number }> {
  const server = await startServerProcess(configPath, deadlinesMs.listen);
  const client = clientOf(server);
  await settlesWithin(client.createStream(stream), "the stream's creation", deadlinesMs.request);
  await settlesWithin(
    client.createTopic(stream, { name: topic, partitions: c.partitions, tiered: true }),
    "the topic's creation",
    deadlinesMs.request,
  );
  await server.stop("SIGTERM");
  if (c.layout === null) return { bucketBytes: 0 };
  const streams = join(dataPath, "streams");
  const [streamId] = readdirSync(streams);
  const [topicId] = readdirSync(join(streams, streamId!, "topics"));
  const partitionsDir = join(streams, streamId!, "topics", topicId!, "partitions");
  let bucketBytes = 0;
  for (let p = 0; p < c.partitions; p++) {
    const address = { streamId: Number(streamId), topicId: Number(topicId), partitionId: p };
    const written = await writeRemoteChain(
      join(partitionsDir, String(p)),
      join(dataPath, "objects"),
      { prefix: "strata", clusterId: "bench", ...address },
      c.layout,
      1_700_000_000_000_000,
    );
    bucketBytes += written.bucketBytes;
  }
  return { bucketBytes };
}

interface BootFigures {
  case: string;
  partitions: number;
  remote_segments: number;
  bucket_bytes: number;
  listening_ms: number;
  first_answer_ms: number;
  rss_bytes: number;
  random_reads?: { reads: number; store_gets: number; index_fetches: number; ms: number };
}

async function bootCase(c: BootCase): Promise<BootFigures> {
  const { configPath, dataPath } = writeConfig(c.name);
  progress(`${c.name}: laying out ${c.partitions} partitions`);
  const { bucketBytes } = await layOut(c, configPath, dataPath);
  // The layout is written without fsyncs: its writeback must not run under the boot it measures.
  const synced = new Deno.Command("sync").outputSync();
  if (!synced.success) throw new Error(`Cannot flush the layout to disk: sync exited with ${synced.code}`);
  progress(`${c.name}: booting`);
  const server = await startServerProcess(configPath, deadlinesMs.listen);
  try {
    const client = clientOf(server);
    await waitFor(
      `partition 0 of ${c.name} to answer`,
      () => client.partition(stream, topic, 0).then(() => true),
      {
        deadlineMs: deadlinesMs.request,
        pace: realTime(5),
        throwMeansNotYet: true,
      },
    );
    const firstAnswerMs = performance.now() - server.spawnedAtMs;
    for (let p = 1; p < c.partitions; p++) {
      await settlesWithin(client.partition(stream, topic, p), `partition ${p}'s answer`, deadlinesMs.request);
    }
    const figures: BootFigures = {
      case: c.name,
      partitions: c.partitions,
      remote_segments: c.partitions * (c.layout?.segments ?? 0),
      bucket_bytes: bucketBytes,
      listening_ms: round(server.listeningAtMs - server.spawnedAtMs),
      first_answer_ms: round(firstAnswerMs),
      rss_bytes: readProcess(server.pid).rssBytes,
    };
    if (c.name === "many") figures.random_reads = await randomReads(client, c);
    return figures;
  } finally {
    await server.stop("SIGTERM");
  }
}

/** Reads one record at a random offset of each partition, counting the store's GETs and index fetches. */
async function randomReads(client: StrataClient, c: BootCase) {
  const rng = new Rng(49);
  const before = parsePrometheusText(await client.metrics());
  const started = performance.now();
  const end = Number((await client.partition(stream, topic, 0))["next_offset"]);
  for (let p = 0; p < c.partitions; p++) {
    const offset = rng.int(0, end - 1);
    const polled = await settlesWithin(
      client.poll(stream, topic, p, { offset, count: 1 }),
      `a read of ${p} at ${offset}`,
      deadlinesMs.request,
    );
    if (polled.messages[0]?.offset !== offset) {
      throw new Error(`Cannot read partition ${p} at ${offset}: got ${polled.messages[0]?.offset}`);
    }
  }
  const ms = performance.now() - started;
  const after = parsePrometheusText(await client.metrics());
  const grew = (name: string, labels: Record<string, string> = {}) =>
    (sampleValue(after, name, labels) ?? 0) - (sampleValue(before, name, labels) ?? 0);
  return {
    reads: c.partitions,
    store_gets: grew("strata_objectstore_requests_total", { op: "get" }),
    index_fetches: grew("strata_index_cache_fetches_total"),
    ms: round(ms),
  };
}

/** The targets of docs/BENCHMARKS.md, "Retention", judged on one run's figures. */
function judge(
  byCase: Map<string, BootFigures>,
  readFigures: ReadFigures | null,
  s3Figures: S3ReadFigures | null,
): string[] {
  const [empty, small, big, many] = ["empty", "small", "big", "many"].map((n) => byCase.get(n)!);
  const missed: string[] = [];
  const check = (ok: boolean, what: string) => ok || missed.push(what);
  const bootDeltaMs = big!.first_answer_ms - small!.first_answer_ms;
  check(
    bootDeltaMs <= 300,
    `boot with ${mib(big!.bucket_bytes)} in the bucket ${bootDeltaMs} ms over the small one's (target 300)`,
  );
  const bigRss = big!.rss_bytes - small!.rss_bytes;
  check(
    bigRss <= 16 * MiB,
    `RSS with ${mib(big!.bucket_bytes)} in the bucket ${mib(bigRss)} over the small one's (target 16 MiB)`,
  );
  check(
    many!.first_answer_ms <= 5000,
    `boot with ${many!.remote_segments} remote segments took ${many!.first_answer_ms} ms (target 5 s)`,
  );
  const manyRss = many!.rss_bytes - empty!.rss_bytes;
  check(
    manyRss <= 64 * MiB,
    `RSS with ${many!.remote_segments} remote segments ${mib(manyRss)} over an empty node's (target 64 MiB)`,
  );
  const reads = many!.random_reads!;
  check(
    reads.index_fetches <= reads.reads,
    `${reads.index_fetches} index fetches for ${reads.reads} random reads (target one each)`,
  );
  const rangedGets = reads.store_gets - reads.index_fetches;
  check(
    rangedGets <= reads.reads,
    `${rangedGets} ranged GETs for ${reads.reads} random reads (target one each)`,
  );
  if (readFigures !== null) {
    check(
      readFigures.warm_vs_local >= 0.9,
      `warm tiered reads at ${readFigures.warm_vs_local} × local (target 0.9)`,
    );
    check(
      readFigures.cold_vs_local >= 0.7,
      `cold tiered reads at ${readFigures.cold_vs_local} × local (target 0.7)`,
    );
    const { tick_idle: idle, tick_cold: cold } = readFigures;
    check(
      cold.p99_ms - idle.p99_ms <= 1,
      `the tick's p99 ${cold.p99_ms} ms while reading cold against ${idle.p99_ms} ms idle (target within 1 ms)`,
    );
  }
  if (s3Figures !== null) {
    check(
      s3Figures.cold_vs_store >= 0.8,
      `cold tiered reads from s3rver at ${s3Figures.cold_vs_store} × its own ranged GETs (target 0.8)`,
    );
  }
  return missed;
}

const round = (x: number) => Math.round(x * 10) / 10;
const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;

await initCrc32c();
try {
  const byCase = new Map<string, BootFigures>();
  for (const c of cases) {
    const figures = await bootCase(c);
    progress(JSON.stringify(figures));
    byCase.set(c.name, figures);
    if (!args.keep) rmSync(join(dir, c.name), { recursive: true, force: true });
  }
  const readsWhyNot = await librdkafkaUnavailable();
  let reads: ReadFigures | null = null;
  let s3Reads: S3ReadFigures | null = null;
  if (readsWhyNot === null) {
    progress("reads: producing, tiering, reading");
    const { configPath, dataPath } = writeConfig("reads");
    reads = await measureReads(
      configPath,
      dataPath,
      quick ? 64e6 : 2e9,
      quick ? "1 MiB" : "8 MiB",
      quick ? 1 : 3,
    );
    progress(JSON.stringify(reads));
    progress("reads on s3rver: producing, tiering, reading; then the store's own ranged GETs");
    const s3Case = writeConfig("reads-s3");
    s3Reads = await measureS3Reads(join(dir, "reads-s3"), s3Case.configPath, s3Case.dataPath, {
      bytes: quick ? 32e6 : 512e6,
      segmentSize: quick ? "1 MiB" : "8 MiB",
      chunkBytes: 8 * MiB,
      fetchConcurrency: 4,
    });
    progress(JSON.stringify(s3Reads));
  } else {
    progress(`reads: skipped: ${readsWhyNot}`);
  }
  const missed = judge(byCase, reads, s3Reads);
  const report = { quick, cases: [...byCase.values()], reads, s3_reads: s3Reads, missed };
  console.log(JSON.stringify(report, null, 2));
  if (args.json !== undefined) writeFileSync(args.json, JSON.stringify(report, null, 2));
  for (const m of missed) console.error(`bench:retention: missed: ${m}`);
  if (!quick && missed.length > 0) Deno.exit(3);
} finally {
  if (ownsDir) rmSync(dir, { recursive: true, force: true });
}
