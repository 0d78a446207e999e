import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { StrataClient } from "../src/client/strata_client.ts";
import { hostedPartitions, topicLayout, topicPartitionsMax, type TopicPlan } from "./lib/partition_layout.ts";
import { judgePartitionTargets, missedTargets, partitionTargetLimits } from "./lib/partition_targets.ts";
import { benchConfigText } from "./lib/bench_config.ts";
import { latenessBetween, type LatenessScrape, readLatenessScrape } from "./lib/lateness_scrape.ts";
import { cpuPercentOfCore, readProcess } from "./lib/proc_stats.ts";
import { type ServerProcess, startServerProcess } from "./lib/server_process.ts";
import { realTime, settlesWithin, waitFor } from "../test/helpers/wait_for.ts";
import { benchIntArg } from "./lib/bench_args.ts";

/**
 * What the number of partitions costs a server at rest (docs/BENCHMARKS.md, "Partition count"). The
 * real server runs as its own process, as `deno task server` runs it, with `fs` tiering: once with
 * one partition (the baseline) and once with `--partitions` of them, in topics of 1,024 (the last one
 * smaller) with 1 MiB segments, one record produced into each. Then, with the server idle:
 *
 *   idle      CPU (utime + stime from /proc), tick lateness p99 and max, RSS and open descriptors
 *   create    the worst tick lateness while one more topic of 1,024 partitions is created
 *   boot      SIGKILL, a start on the same data directory, and the time until a partition answers a poll
 *   floor     the CPU of a Deno process doing nothing but a timer every tick_interval (10 ms): what
 *             any loop ticking that often costs on the machine, beneath every server figure
 *
 *   deno task bench:partitions [--partitions 10000] [--idle-seconds 10] [--max-open-files N]
 *     [--quick] [--json PATH] [--dir PATH]
 *
 * `--quick` hosts 2 topics of 64 partitions and idles 2 s. The targets are judged on every run; a full
 * run that misses one exits with code 3 after printing which, a quick run exits 0 either way.
 */

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    partitions: { type: "string" },
    "idle-seconds": { type: "string" },
    "max-open-files": { type: "string" },
    quick: { type: "boolean", default: false },
    json: { type: "string" },
    dir: { type: "string" },
  },
});

const quick = args.quick;
const partitionsAsked = benchIntArg("partitions", args.partitions ?? (quick ? "128" : "10000"), 1, 1_048_576);
const perTopic = quick ? 64 : topicPartitionsMax;
const idleSeconds = benchIntArg("idle-seconds", args["idle-seconds"] ?? (quick ? "2" : "10"), 1, 3600);
const maxOpenFiles = args["max-open-files"] === undefined
  ? null
  : benchIntArg("max-open-files", args["max-open-files"], 1, 1_048_576);
const layout = topicLayout(partitionsAsked, perTopic);
const stream = "bench";
const createdTopic: TopicPlan = { name: "created", partitions: topicPartitionsMax };
/** Produces in flight at once while each partition gets its record. */
const produceConcurrency = 16;
/** Deadlines: generous, since a large layout is slow on code that does per-partition work per tick. */
const deadlinesMs = { listen: 300_000, request: 60_000, createTopic: 600_000, serve: 600_000 };

const dir = args.dir ?? mkdtempSync(join(tmpdir(), "strata-bench-partitions-"));
const ownsDir = args.dir === undefined;

/** A server's directory under the run's: its config.toml (port 0, its own data) and its data. */
function writeConfig(name: string): string {
  const home = join(dir, name);
  mkdirSync(home, { recursive: true });
  const path = join(home, "config.toml");
  const shipped = readFileSync(new URL("../config.toml", import.meta.url), "utf8");
  writeFileSync(path, benchConfigText(shipped, join(home, "data"), maxOpenFiles));
  return path;
}

function clientOf(server: ServerProcess): StrataClient {
  return new StrataClient({ baseUrl: server.baseUrl, encoding: "msgpack" });
}

function progress(text: string): void {
  console.error(`bench:partitions: ${text}`);
}

/** The stream, its topics in order, and one record produced into every partition. */
async function populate(client: StrataClient, topics: readonly TopicPlan[]) {
  await settlesWithin(client.createStream(stream), "the stream's creation", deadlinesMs.request);
  const createMs: number[] = [];
  for (const topic of topics) {
    const started = performance.now();
    await settlesWithin(
      client.createTopic(stream, { name: topic.name, partitions: topic.partitions, segment_size: "1 MiB" }),
      `the creation of topic ${topic.name}`,
      deadlinesMs.createTopic,
    );
    createMs.push(performance.now() - started);
  }
  const partitions = topics.flatMap((topic) =>
    Array.from({ length: topic.partitions }, (_, p) => ({ topic, p }))
  );
  const payload = new TextEncoder().encode("one record per partition");
  const produceStarted = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: produceConcurrency }, async () => {
    while (next < partitions.length) {
      const { topic, p } = partitions[next++]!;
      await settlesWithin(
        client.produce(stream, topic.name, [{ payload }], p),
        `a produce into ${topic.name}/${p}`,
        deadlinesMs.request,
      );
    }
  }));
  return {
    topic_create_ms: { max: round(Math.max(...createMs)), total: round(sum(createMs)) },
    produce_ms: round(performance.now() - produceStarted),
  };
}

/** One scrape of shard 0's lateness figures, and how long the scrape took to answer. */
async function scrapeLateness(client: StrataClient): Promise<LatenessScrape & { scrapeMs: number }> {
  const started = performance.now();
  const text = await settlesWithin(client.metrics(), "a scrape of /metrics", deadlinesMs.request);
  return { ...readLatenessScrape(text, "0"), scrapeMs: performance.now() - started };
}

/** The server left alone for `idleSeconds`, between two scrapes and two readings of /proc. */
async function measureIdle(server: ServerProcess, client: StrataClient) {
  const opening = await scrapeLateness(client);
  const before = readProcess(server.pid);
  const started = performance.now();
  // The window is the measurement itself: nothing else is waited for.
  await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
  const after = readProcess(server.pid);
  const elapsedMs = performance.now() - started;
  const closing = await scrapeLateness(client);
  // A scrape right behind the closing one: its max is the lateness the closing scrape's own work
  // (after it read the max) inflicted on the next tick, as the opening one did on the window's first.
  const behind = await scrapeLateness(client);
  return {
    cpu_percent_of_core: round(cpuPercentOfCore(before.cpuMs, after.cpuMs, elapsedMs)),
    loop_thread_cpu_percent_of_core: round(cpuPercentOfCore(before.loopCpuMs, after.loopCpuMs, elapsedMs)),
    tick_lateness_ms: latenessBetween(opening, closing),
    scrape_ms: round(opening.scrapeMs),
    scrape_hold_ms: round(behind.maxMs),
    rss_mb: round(after.rssBytes / 1e6),
    open_fds: after.openFds,
  };
}

/** The tick's lateness over the creation of one more topic of 1,024 partitions. */
async function measureCreate(client: StrataClient) {
  const opening = await scrapeLateness(client);
  const started = performance.now();
  await settlesWithin(
    client.createTopic(stream, {
      name: createdTopic.name,
      partitions: createdTopic.partitions,
      segment_size: "1 MiB",
    }),
    `the creation of topic ${createdTopic.name}`,
    deadlinesMs.createTopic,
  );
  const ms = performance.now() - started;
  return {
    partitions: createdTopic.partitions,
    ms: round(ms),
    tick_lateness_ms: latenessBetween(opening, await scrapeLateness(client)),
  };
}

/** SIGKILL, a start on the same data directory, and the time until the last partition answers a poll. */
async function measureBoot(server: ServerProcess, configPath: string) {
  await server.stop("SIGKILL");
  const rebooted = await startServerProcess(configPath, deadlinesMs.listen);
  try {
    await awaitLastRecord(clientOf(rebooted));
  } catch (error) {
    await rebooted.stop("SIGKILL");
    throw error;
  }
  const servingAtMs = performance.now();
  return {
    server: rebooted,
    boot: {
      listening_ms: round(rebooted.listeningAtMs - rebooted.spawnedAtMs),
      serving_ms: round(servingAtMs - rebooted.spawnedAtMs),
    },
  };
}

/** Polls the layout's last partition until it answers its one record, for at most `deadlinesMs.serve`. */
async function awaitLastRecord(client: StrataClient): Promise<void> {
  const last = layout.at(-1)!;
  const partition = last.partitions - 1;
  // The server may refuse while it opens its partitions: that is not yet, and asked again shortly.
  await waitFor(`${last.name}/${partition} to answer its record`, async () => {
    const polled = await settlesWithin(
      client.poll(stream, last.name, partition, { offset: 0, count: 1 }),
      `a poll of ${last.name}/${partition}`,
      deadlinesMs.request,
    );
    return polled.messages.length === 1;
  }, { deadlineMs: deadlinesMs.serve, pace: realTime(10), throwMeansNotYet: true });
}

/** What the server lists: partitions of the layout's topics, and of every topic. */
async function countHosted(client: StrataClient) {
  const streams = await settlesWithin(client.listStreams(), "the list of streams", deadlinesMs.request);
  const hosted = hostedPartitions(streams.find((s) => s["name"] === stream));
  const ofLayout = layout.reduce((n, topic) => n + (hosted.get(topic.name) ?? 0), 0);
  return { layout: ofLayout, all: sum([...hosted.values()]) };
}

/** The tick interval the servers run with (the shipped default). */
const tickIntervalMs = 10;

/**
 * A Deno process that does nothing but a repeating timer every `tickIntervalMs` (as the pump's), for
 * `idleSeconds` after a second to settle: the CPU a loop ticking that often costs here, which the idle
 * servers' figures include.
 */
async function measureTimerFloor() {
  progress(`floor: a bare ${tickIntervalMs} ms timer`);
  const program = `setInterval(() => {}, ${tickIntervalMs});`;
  const child = spawn("deno", ["eval", program], { stdio: "ignore" });
  try {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const before = readProcess(child.pid!);
    const started = performance.now();
    await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
    const after = readProcess(child.pid!);
    return {
      cpu_percent_of_core: round(cpuPercentOfCore(before.cpuMs, after.cpuMs, performance.now() - started)),
    };
  } finally {
    child.kill("SIGKILL");
  }
}

async function runBaseline() {
  progress("baseline: one partition");
  const server = await startServerProcess(writeConfig("baseline"), deadlinesMs.listen);
  try {
    const client = clientOf(server);
    await populate(client, [{ name: "t0000", partitions: 1 }]);
    return { partitions: 1, idle: await measureIdle(server, client) };
  } catch (error) {
    throw withServerLog(error, server);
  } finally {
    await server.stop("SIGKILL");
  }
}

/** Lines of the server's log an error carries: enough for the server's own error and its cause. */
const serverLogLinesInError = 20;

/** The error with the end of the server's log appended, where the server's side of it is. */
function withServerLog(error: unknown, server: ServerProcess): Error {
  const lines = server.stderrTail().trimEnd().split("\n").slice(-serverLogLinesInError).join("\n");
  const message = error instanceof Error ? error.message : String(error);
  return new Error(`Cannot finish the benchmark: ${message}\nThe server's log ends:\n${lines}`, {
    cause: error,
  });
}

async function runLayout() {
  progress(`${partitionsAsked} partitions in ${layout.length} topics of up to ${perTopic}`);
  const configPath = writeConfig("partitions");
  const server = await startServerProcess(configPath, deadlinesMs.listen);
  let running = server;
  try {
    const client = clientOf(server);
    const setup = await populate(client, layout);
    const hostedBefore = await countHosted(client);
    progress(`hosting ${hostedBefore.layout} partitions; idle for ${idleSeconds} s`);
    const idle = await measureIdle(server, client);
    progress(`creating a topic of ${createdTopic.partitions} partitions`);
    const create = await measureCreate(client);
    progress("SIGKILL and boot");
    const { server: rebooted, boot } = await measureBoot(server, configPath);
    running = rebooted;
    const hostedAfter = await countHosted(clientOf(rebooted));
    await rebooted.stop("SIGTERM");
    return {
      partitions_hosted: hostedBefore.layout,
      topics: layout.length,
      setup,
      idle,
      create_topic: create,
      boot_after_sigkill: {
        ...boot,
        partitions_hosted: hostedAfter.layout,
        partitions_hosted_all: hostedAfter.all,
      },
    };
  } catch (error) {
    throw withServerLog(error, running);
  } finally {
    await running.stop("SIGKILL");
  }
}

const round = (x: number) => Math.round(x * 100) / 100;
const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);

function printTable(report: Report): void {
  const b = report.baseline.idle;
  const s = report.server;
  const rows: [string, string, string][] = [
    ["idle CPU % of a core", String(b.cpu_percent_of_core), String(s.idle.cpu_percent_of_core)],
    [
      `  a bare ${tickIntervalMs} ms timer's, beneath both`,
      String(report.timer_floor.cpu_percent_of_core),
      "",
    ],
    [
      "  of it the loop's thread",
      String(b.loop_thread_cpu_percent_of_core),
      String(s.idle.loop_thread_cpu_percent_of_core),
    ],
    ["idle tick p99 ms", String(b.tick_lateness_ms.p99_ms), String(s.idle.tick_lateness_ms.p99_ms)],
    ["idle tick max ms", String(b.tick_lateness_ms.max_ms), String(s.idle.tick_lateness_ms.max_ms)],
    [
      "idle ticks (missed)",
      `${b.tick_lateness_ms.ticks} (${b.tick_lateness_ms.missed_ticks})`,
      `${s.idle.tick_lateness_ms.ticks} (${s.idle.tick_lateness_ms.missed_ticks})`,
    ],
    ["scrape ms", String(b.scrape_ms), String(s.idle.scrape_ms)],
    ["  tick max right behind a scrape ms", String(b.scrape_hold_ms), String(s.idle.scrape_hold_ms)],
    ["RSS MB", String(b.rss_mb), String(s.idle.rss_mb)],
    ["open descriptors", String(b.open_fds), String(s.idle.open_fds)],
    ["create 1,024-partition topic ms", "", String(s.create_topic.ms)],
    ["  its tick max ms", "", String(s.create_topic.tick_lateness_ms.max_ms)],
    ["boot after SIGKILL: listening ms", "", String(s.boot_after_sigkill.listening_ms)],
    ["boot after SIGKILL: serving ms", "", String(s.boot_after_sigkill.serving_ms)],
  ];
  console.log(
    `${"".padEnd(34)} ${"1 partition".padStart(12)} ${`${s.partitions_hosted} partitions`.padStart(18)}`,
  );
  for (const [name, base, many] of rows) {
    console.log(`${name.padEnd(34)} ${base.padStart(12)} ${many.padStart(18)}`);
  }
  for (const t of report.targets) {
    const verdict = t.pass === null ? "not judged (no --max-open-files)" : t.pass ? "met" : "MISSED";
    console.log(`target ${t.name}: ${t.measured} against ${t.limit ?? "-"}: ${verdict}`);
  }
}

type Report = Awaited<ReturnType<typeof buildReport>>;

async function buildReport() {
  const timerFloor = await measureTimerFloor();
  const baseline = await runBaseline();
  const server = await runLayout();
  const targets = judgePartitionTargets({
    idleCpuPercentOfCore: server.idle.cpu_percent_of_core,
    idleTickP99Ms: server.idle.tick_lateness_ms.p99_ms,
    idleTickMaxMs: server.idle.tick_lateness_ms.max_ms,
    baselineTickP99Ms: baseline.idle.tick_lateness_ms.p99_ms,
    baselineTickMaxMs: baseline.idle.tick_lateness_ms.max_ms,
    createTopicTickMaxMs: server.create_topic.tick_lateness_ms.max_ms,
    bootAfterKillMs: server.boot_after_sigkill.serving_ms,
    openFds: server.idle.open_fds,
    maxOpenFiles,
  });
  return {
    machine: {
      cpus: cpus().length,
      os: Deno.build.os,
      deno: Deno.version.deno,
      memory_gib: Math.round(totalmem() / 2 ** 30),
    },
    settings: {
      quick,
      partitions: partitionsAsked,
      partitions_per_topic: perTopic,
      topics: layout.length,
      idle_seconds: idleSeconds,
      segment_size: "1 MiB",
      max_open_files: maxOpenFiles,
      fd_allowance: partitionTargetLimits.fdAllowance,
    },
    timer_floor: timerFloor,
    baseline,
    server,
    targets,
  };
}

try {
  const report = await buildReport();
  printTable(report);
  if (args.json !== undefined) writeFileSync(args.json, JSON.stringify(report, null, 2) + "\n");
  const missed = missedTargets(report.targets);
  if (!quick && missed.length > 0) {
    console.log(`missed ${missed.length} target(s): ${missed.map((t) => t.name).join("; ")}`);
    Deno.exitCode = 3;
  }
} finally {
  if (ownsDir) rmSync(dir, { recursive: true, force: true });
}
