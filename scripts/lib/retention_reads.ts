import { rmSync } from "node:fs";
import { join } from "node:path";
import { StrataClient } from "../../src/client/strata_client.ts";
import { realTime, settlesWithin, waitFor } from "../../test/helpers/wait_for.ts";
import {
  latenessBetween,
  type LatenessScrape,
  readLatenessScrape,
  type WindowLateness,
} from "./lateness_scrape.ts";
import { librdkafkaPython } from "./librdkafka_python.ts";
import { readThreadsCpuMs, threadsCpuBetween } from "./proc_stats.ts";
import { type ServerProcess, startServerProcess } from "./server_process.ts";

/**
 * The reads of `bench:retention`: one partition read from offset 0 through a librdkafka consumer
 * (`kafka_load.py consume`), the same bytes from local segments (an untiered topic), from evicted
 * segments with the chunk cache empty (cold: the server restarted on an emptied cache directory,
 * the fs bucket's files in the page cache) and again (warm: the chunks cached). Each round reads all
 * three; the figures are the rounds' medians, since one consumer's rate moves by a fifth from read
 * to read on the same bytes.
 */
export interface ReadFigures extends RoundFigures {
  bytes: number;
  /** Bytes of the tiered topic held only in the bucket when the reads began. */
  remote_bytes: number;
  /** The tick's lateness with the server left idle after the reads. */
  tick_idle: WindowLateness;
  /** Each round's own figures, in order. */
  rounds: RoundFigures[];
}

/** One round's reads: local, cold, warm. */
export interface RoundFigures {
  local_mb_s: number;
  cold_mb_s: number;
  warm_mb_s: number;
  cold_vs_local: number;
  warm_vs_local: number;
  /** The tick's lateness while the server served the local read, and the restarted one the cold read. */
  tick_local: WindowLateness;
  tick_cold: WindowLateness;
  /**
   * The server's CPU time (ms) in each read, by thread (`readThreadsCpuMs`): what a cold read's
   * fills cost on each thread beyond the warm read's.
   */
  cpu_ms_by_thread: {
    local: Record<string, number>;
    cold: Record<string, number>;
    warm: Record<string, number>;
  };
}

/** How long the server is left idle after the reads, its tick measured meanwhile. */
const idleWindowMs = 3000;

const valueBytes = 1024;
const loadScript = new URL("./kafka_load.py", import.meta.url).pathname;
const deadlinesMs = { listen: 120_000, request: 60_000, tiering: 600_000 };

/**
 * Produces `bytes` into each topic, lets the tiered one tier and evict, and reads both back in
 * `rounds` rounds.
 */
export async function measureReads(
  configPath: string,
  dataPath: string,
  bytes: number,
  segmentSize: string,
  rounds = 1,
): Promise<ReadFigures> {
  const records = Math.ceil(bytes / valueBytes);
  let server = await startServerProcess(configPath, deadlinesMs.listen);
  try {
    const remoteBytes = await produceAndEvict(server, records, segmentSize, true);
    const figures: RoundFigures[] = [];
    let readBytes = 0;
    for (let r = 0; r < rounds; r++) {
      const read = await readRound(server, records, () => restartCold(configPath, dataPath));
      server = read.server;
      readBytes = read.bytes;
      figures.push(read.figures);
    }
    // The same server left alone afterwards is the baseline: its boot's tail is not idle. The window
    // is the measurement itself (the tick left alone), not a wait for a condition.
    const idleFrom = await scrapeLateness(server);
    await new Promise((resolve) => setTimeout(resolve, idleWindowMs));
    const tickIdle = latenessBetween(idleFrom, await scrapeLateness(server));
    return {
      bytes: readBytes,
      remote_bytes: remoteBytes,
      tick_idle: tickIdle,
      ...medianRound(figures),
      rounds: figures,
    };
  } finally {
    await server.stop("SIGTERM");
  }
}

/**
 * One round: the local read on `server`, which then stops; the cold read on a server `restart`
 * gives, and the warm read on it. Returns that server, which the caller stops.
 */
async function readRound(
  server: ServerProcess,
  records: number,
  restart: () => Promise<ServerProcess>,
): Promise<{ server: ServerProcess; bytes: number; figures: RoundFigures }> {
  const localFrom = await scrapeLateness(server);
  const [local, cpuLocal] = await withThreadsCpu(
    server,
    () => load("consume", kafkaAddress(server), "local", records),
  );
  const tickLocal = latenessBetween(localFrom, await scrapeLateness(server));
  await server.stop("SIGTERM");
  const restarted = await restart();
  const coldFrom = await scrapeLateness(restarted);
  const [cold, cpuCold] = await withThreadsCpu(
    restarted,
    () => load("consume", kafkaAddress(restarted), "cold", records),
  );
  const tickCold = latenessBetween(coldFrom, await scrapeLateness(restarted));
  const [warm, cpuWarm] = await withThreadsCpu(
    restarted,
    () => load("consume", kafkaAddress(restarted), "cold", records),
  );
  const figures: RoundFigures = {
    local_mb_s: round(mbS(local)),
    cold_mb_s: round(mbS(cold)),
    warm_mb_s: round(mbS(warm)),
    cold_vs_local: round(mbS(cold) / mbS(local), 100),
    warm_vs_local: round(mbS(warm) / mbS(local), 100),
    tick_local: tickLocal,
    tick_cold: tickCold,
    cpu_ms_by_thread: { local: cpuLocal, cold: cpuCold, warm: cpuWarm },
  };
  return { server: restarted, bytes: local.bytes, figures };
}

/**
 * The rounds' medians: each rate and ratio on its own, and the tick's lateness and the CPU time of
 * the round whose cold ratio is the median (an even count takes the lower middle).
 */
export function medianRound(rounds: readonly RoundFigures[]): RoundFigures {
  if (rounds.length === 0) throw new Error("Cannot take the median of no rounds");
  const median = (pick: (r: RoundFigures) => number) => {
    const sorted = rounds.map(pick).sort((a, b) => a - b);
    return sorted[Math.floor((sorted.length - 1) / 2)]!;
  };
  const coldMedian = median((r) => r.cold_vs_local);
  const middle = rounds.find((r) => r.cold_vs_local === coldMedian)!;
  return {
    local_mb_s: median((r) => r.local_mb_s),
    cold_mb_s: median((r) => r.cold_mb_s),
    warm_mb_s: median((r) => r.warm_mb_s),
    cold_vs_local: coldMedian,
    warm_vs_local: median((r) => r.warm_vs_local),
    tick_local: middle.tick_local,
    tick_cold: middle.tick_cold,
    cpu_ms_by_thread: middle.cpu_ms_by_thread,
  };
}

/**
 * The cold read alone, on a server whose `env` points it at another store (an S3 server): `bytes`
 * produced into the tiered topic, evicted, and read from offset 0 with the chunk cache emptied.
 */
export async function measureColdRead(
  configPath: string,
  dataPath: string,
  bytes: number,
  segmentSize: string,
  env: Record<string, string>,
): Promise<{ bytes: number; seconds: number; remote_bytes: number }> {
  const records = Math.ceil(bytes / valueBytes);
  let server = await startServerProcess(configPath, deadlinesMs.listen, env);
  try {
    const remoteBytes = await produceAndEvict(server, records, segmentSize, false);
    await server.stop("SIGTERM");
    server = await restartCold(configPath, dataPath, env);
    const cold = await load("consume", kafkaAddress(server), "cold", records);
    return { bytes: cold.bytes, seconds: cold.seconds, remote_bytes: remoteBytes };
  } finally {
    await server.stop("SIGTERM");
  }
}

/**
 * Creates the tiered topic `cold` (and with `withLocal` the untiered `local`), produces `records`
 * into each, and waits until the tiered one is evicted; its remote bytes.
 */
async function produceAndEvict(
  server: ServerProcess,
  records: number,
  segmentSize: string,
  withLocal: boolean,
): Promise<number> {
  const client = new StrataClient({ baseUrl: server.baseUrl, encoding: "msgpack" });
  await settlesWithin(client.createStream("kafka"), "the stream's creation", deadlinesMs.request);
  const topics: [string, boolean][] = withLocal ? [["local", false], ["cold", true]] : [["cold", true]];
  for (const [name, tiered] of topics) {
    await settlesWithin(
      client.createTopic("kafka", {
        name,
        partitions: 1,
        tiered,
        segment_size: segmentSize,
        ...(tiered ? { local_retention_size: segmentSize } : {}),
      }),
      `the creation of topic ${name}`,
      deadlinesMs.request,
    );
    await load("produce", kafkaAddress(server), name, records);
  }
  return await evicted(client);
}

/** The server started again on an emptied chunk cache. */
function restartCold(configPath: string, dataPath: string, env: Record<string, string> = {}) {
  rmSync(join(dataPath, "cache"), { recursive: true, force: true });
  return startServerProcess(configPath, deadlinesMs.listen, env);
}

/**
 * What `run` returns, and the server's CPU time by thread while it ran. The dirty pages of what was
 * written before (the produce's gigabytes, the chunk files) are flushed first: their writeback
 * under a read halved the first local read in one run.
 */
async function withThreadsCpu<T>(
  server: ServerProcess,
  run: () => Promise<T>,
): Promise<[T, Record<string, number>]> {
  const synced = await new Deno.Command("sync").output();
  if (!synced.success) {
    throw new Error(`Cannot flush the page cache before a read: sync exited with ${synced.code}`);
  }
  const before = readThreadsCpuMs(server.pid);
  const result = await run();
  return [result, threadsCpuBetween(before, readThreadsCpuMs(server.pid))];
}

const mbS = (r: { bytes: number; seconds: number }) => r.bytes / 1e6 / r.seconds;

/** Waits for the tiered topic's sealed segments to be uploaded and evicted; its remote bytes. */
async function evicted(client: StrataClient): Promise<number> {
  let remote = 0;
  await waitFor("the tiered topic's sealed segments to be evicted", async () => {
    const p = await client.partition("kafka", "cold", 0) as {
      remote_size_bytes: number;
      segments: { sealed: boolean; location: string }[];
    };
    remote = p.remote_size_bytes;
    const sealed = p.segments.filter((s) => s.sealed);
    // The local envelope keeps a segment's worth; every older sealed segment goes.
    return sealed.length > 1 && sealed.slice(0, -1).every((s) => s.location === "remote");
  }, { deadlineMs: deadlinesMs.tiering, pace: realTime(200) });
  return remote;
}

/** The shard's tick lateness so far, from the server's /metrics. */
async function scrapeLateness(server: ServerProcess): Promise<LatenessScrape> {
  const response = await fetch(`${server.baseUrl}/metrics`);
  if (!response.ok) throw new Error(`Cannot scrape ${server.baseUrl}/metrics: HTTP ${response.status}`);
  return readLatenessScrape(await response.text(), "0");
}

function kafkaAddress(server: ServerProcess): string {
  const address = /"msg":"kafka listening","address":"([^"]+)"/.exec(server.stderrTail())?.[1];
  if (address === undefined) throw new Error("Cannot read: the server logged no Kafka address");
  return address;
}

async function load(mode: "produce" | "consume", broker: string, topic: string, records: number) {
  const extra = mode === "produce" ? [String(valueBytes)] : [];
  const out = await new Deno.Command(librdkafkaPython, {
    args: [loadScript, mode, broker, topic, "0", String(records), ...extra],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`Cannot ${mode} ${topic}: ${new TextDecoder().decode(out.stderr).slice(-2000)}`);
  }
  return JSON.parse(new TextDecoder().decode(out.stdout)) as {
    records: number;
    bytes: number;
    seconds: number;
  };
}

export function round(x: number, to = 10): number {
  return Math.round(x * to) / to;
}
