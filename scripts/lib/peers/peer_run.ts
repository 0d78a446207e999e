import {
  latenessBetween,
  type LatenessScrape,
  readLatenessScrape,
  type WindowLateness,
} from "../lateness_scrape.ts";
import type { LoadArgs, LoadResult } from "./peer_load.ts";
import type { RunningPeer, Variant } from "./peer_variants.ts";
import { readProcess } from "../proc_stats.ts";
import { readThreadSchedstat, schedstatRates } from "../thread_schedstat.ts";

/**
 * One variant of bench:peers, measured once: its server started fresh, an idle window (Strata: the
 * tick's lateness at rest), the produce phase (every producer for `seconds`), the consume phase
 * (every acknowledged record read back and checked), the server stopped. Server CPU comes from
 * `/proc` around each phase, RSS is sampled every `rssSampleIntervalMs`, the load reports its own CPU.
 */

export interface RunOptions {
  dir: string;
  portBase: number;
  seconds: number;
  idleSeconds: number;
  partitions: number;
  producers: number;
  window: number;
  payloadBytes: number;
}

/** One phase's figures. */
export interface PhaseFigures {
  records: number;
  bytes: number;
  mb_s: number;
  records_s: number;
  /** The server's CPU seconds in the phase. */
  server_cpu_s: number;
  /** The load's own CPU seconds. */
  client_cpu_s: number;
  p50_ms?: number;
  p99_ms?: number;
}

export interface RunFigures {
  produce: PhaseFigures;
  consume: PhaseFigures;
  peak_rss_mb: number;
  /** Strata only: the tick at rest and while producing. */
  tick_lateness_ms?: { idle: WindowLateness; produce: WindowLateness };
  /**
   * Strata only: its event loop's thread while producing, in ms per s: on a core, and ready to run
   * but waiting for one (the machine's cores taken by the load and the server's other threads).
   */
  loop_thread_produce?: { on_cpu_ms_per_s: number; runqueue_wait_ms_per_s: number };
}

const loadDeadlineMs = 600_000;

/** Runs a load process to its end and reads the JSON line it printed. */
async function runLoad(variant: Variant, args: LoadArgs): Promise<LoadResult> {
  const [command, ...rest] = variant.loadCommand(JSON.stringify(args));
  const child = new Deno.Command(command!, {
    args: rest,
    cwd: new URL("../../..", import.meta.url).pathname,
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(loadDeadlineMs),
  });
  const out = await child.output();
  const text = new TextDecoder().decode(out.stdout).trim().split("\n").at(-1) ?? "";
  if (!out.success) {
    const stderr = new TextDecoder().decode(out.stderr).slice(-2000);
    throw new Error(`Cannot run the ${args.mode} load of ${variant.key}: exit ${out.code}: ${stderr}`);
  }
  return JSON.parse(text) as LoadResult;
}

/** How often the server's RSS is read for its peak. */
const rssSampleIntervalMs = 100;

/** Samples a process's RSS every `rssSampleIntervalMs` until stopped; `peakBytes` is the highest seen. */
class RssSampler {
  peakBytes = 0;
  readonly #timer: ReturnType<typeof setInterval>;

  constructor(pid: number) {
    const sample = () => {
      try {
        this.peakBytes = Math.max(this.peakBytes, readProcess(pid).rssBytes);
      } catch {
        // The process is gone: the peak stands.
      }
    };
    sample();
    this.#timer = setInterval(sample, rssSampleIntervalMs);
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

async function scrape(url: string): Promise<LatenessScrape> {
  return readLatenessScrape(await (await fetch(url)).text(), "0");
}

async function phase(
  peer: RunningPeer,
  variant: Variant,
  args: LoadArgs,
): Promise<{ load: LoadResult; figures: PhaseFigures }> {
  const before = readProcess(peer.pid).cpuMs;
  const load = await runLoad(variant, args);
  const serverCpuS = (readProcess(peer.pid).cpuMs - before) / 1000;
  return {
    load,
    figures: {
      records: load.records,
      bytes: load.bytes,
      mb_s: round(load.bytes / 1e6 / load.seconds),
      records_s: round(load.records / load.seconds),
      server_cpu_s: round(serverCpuS),
      client_cpu_s: round(load.cpuMs / 1000),
      ...(load.p50Ms === undefined ? {} : { p50_ms: round(load.p50Ms), p99_ms: round(load.p99Ms!) }),
    },
  };
}

/** Measures `variant` once on a fresh server. */
export async function runVariant(variant: Variant, o: RunOptions): Promise<RunFigures> {
  const dir = await Deno.makeTempDir({ dir: o.dir, prefix: `${variant.key}-${variant.mode}-` });
  const peer = await variant.start(dir, o.portBase);
  const rss = new RssSampler(peer.pid);
  try {
    const args: LoadArgs = {
      mode: "produce",
      address: peer.address,
      partitions: o.partitions,
      producers: o.producers,
      window: o.window,
      seconds: o.seconds,
      payloadBytes: o.payloadBytes,
    };
    let idle: WindowLateness | null = null;
    if (peer.metricsUrl !== null) {
      const start = await scrape(peer.metricsUrl);
      await new Promise((resolve) => setTimeout(resolve, o.idleSeconds * 1000));
      idle = latenessBetween(start, await scrape(peer.metricsUrl));
    }
    const beforeProduce = peer.metricsUrl === null ? null : await scrape(peer.metricsUrl);
    // The event loop's thread is the process's first, its id the process's.
    const loopSchedstat = `/proc/${peer.pid}/task/${peer.pid}/schedstat`;
    const schedBefore = readThreadSchedstat(loopSchedstat);
    const produceStartedMs = performance.now();
    const produced = await phase(peer, variant, args);
    const loopThread = schedstatRates(
      schedBefore,
      readThreadSchedstat(loopSchedstat),
      performance.now() - produceStartedMs,
    );
    const produceLateness = beforeProduce === null
      ? null
      : latenessBetween(beforeProduce, await scrape(peer.metricsUrl!));
    const consumed = await phase(peer, variant, {
      ...args,
      mode: "consume",
      acknowledged: produced.load.acknowledged,
    });
    return {
      produce: produced.figures,
      consume: consumed.figures,
      peak_rss_mb: round(rss.peakBytes / 1e6),
      ...(idle === null ? {} : { tick_lateness_ms: { idle, produce: produceLateness! } }),
      ...(peer.metricsUrl === null || loopThread === null ? {} : {
        loop_thread_produce: {
          on_cpu_ms_per_s: loopThread.onCpuMsPerS,
          runqueue_wait_ms_per_s: loopThread.runqueueWaitMsPerS,
        },
      }),
    };
  } finally {
    rss.stop();
    await peer.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

export function round(n: number): number {
  return Math.round(n * 100) / 100;
}
