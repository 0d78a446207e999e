import { parseArgs } from "node:util";
import { judgeTargets, type Report, reportTable, summarize, throughputSvg } from "./lib/peers/peer_report.ts";
import { type RunFigures, runVariant } from "./lib/peers/peer_run.ts";
import { type Variant, variants } from "./lib/peers/peer_variants.ts";
import { benchIntArg } from "./lib/bench_args.ts";

/**
 * Strata beside two real streaming servers, on the same machine in the same run (docs/BENCHMARKS.md,
 * "Peers"): NATS with JetStream and RabbitMQ with streams, each started here from Debian's packages
 * (a missing one is reported with how to install it, and left out). The same workload for every
 * server, the servers alternated round by round: 1 KiB random payloads over 4 partitions (streams
 * for RabbitMQ, subjects for NATS), 8 producers with a bounded window in flight for `--seconds`,
 * acknowledgements awaited; then every acknowledged record consumed back from the start and checked.
 *
 *   deno task bench:peers [--seconds 10] [--rounds 3] [--window 1000] [--quick] [--json PATH] [--svg PATH]
 *                         [--only strata,nats,...]
 *
 * Strata runs through its Kafka listener with librdkafka and with kafkajs, with `fsync = "interval"`
 * (page cache, as the peers) and with `fsync = "always"` (durable: no peer here syncs each write).
 * `--quick` is one round of 2 s. `--only` keeps the variants whose keys it lists (`strata`,
 * `strata_kafkajs`, `nats`, `rabbitmq`). A full run of every variant that misses a target exits 3.
 */

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    seconds: { type: "string" },
    rounds: { type: "string" },
    quick: { type: "boolean", default: false },
    json: { type: "string" },
    svg: { type: "string" },
    window: { type: "string", default: "1000" },
    "port-base": { type: "string", default: "31000" },
    only: { type: "string" },
  },
});

const quick = args.quick!;
const seconds = benchIntArg("seconds", args.seconds ?? (quick ? "2" : "10"), 1, 600);
const rounds = benchIntArg("rounds", args.rounds ?? (quick ? "1" : "3"), 1, 20);
const portBase = benchIntArg("port-base", args["port-base"]!, 20_000, 60_000);
/** Each producer's records sent and not yet acknowledged, at most (`--window`). */
const window = benchIntArg("window", args.window!, 1, 100_000);
const workload = { partitions: 4, producers: 8, window, payloadBytes: 1024 };

const progress = (text: string) => console.error(`bench:peers: ${text}`);

/** The variants `--only` keeps: all without it; an unknown key is an error naming the known ones. */
function chosen(all: readonly Variant[]): Variant[] {
  if (args.only === undefined) return [...all];
  const keys = args.only.split(",").map((k) => k.trim());
  const known = new Set(all.map((v) => v.key));
  const unknown = keys.filter((k) => !known.has(k));
  if (unknown.length > 0) {
    throw new Error(
      `Cannot run the benchmark: --only names ${unknown.join(", ")}; the variants are ${
        [...known].join(", ")
      }`,
    );
  }
  return all.filter((v) => keys.includes(v.key));
}

async function available(
  all: readonly Variant[],
): Promise<{ runnable: Variant[]; skipped: Record<string, string> }> {
  const runnable: Variant[] = [];
  const skipped: Record<string, string> = {};
  for (const variant of chosen(all)) {
    const why = await variant.unavailable();
    if (why === null) runnable.push(variant);
    else {
      skipped[`${variant.mode}/${variant.key}`] = why;
      progress(`skipping ${variant.key} (${variant.mode}): ${why}`);
    }
  }
  return { runnable, skipped };
}

async function main(): Promise<number> {
  const { runnable, skipped } = await available(variants(workload.partitions));
  const dir = await Deno.makeTempDir({ prefix: "strata-bench-peers-" });
  const runs = new Map<Variant, RunFigures[]>(runnable.map((v) => [v, []]));
  try {
    for (let round = 0; round < rounds; round++) {
      // Alternated: each round starts one variant later, so no server always runs first or last.
      const order = runnable.map((_, i) => runnable[(i + round) % runnable.length]!);
      for (const variant of order) {
        progress(`round ${round + 1} of ${rounds}: ${variant.key} (${variant.mode})`);
        runs.get(variant)!.push(
          await runVariant(variant, {
            dir,
            portBase,
            seconds,
            idleSeconds: Math.min(seconds, 5),
            ...workload,
          }),
        );
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  const report: Report = {};
  for (const [variant, figures] of runs) {
    (report[variant.mode] ??= {})[variant.key] = summarize(variant.client, figures);
  }
  const targets = judgeTargets(report);
  console.log(reportTable(report));
  for (const t of targets) {
    console.log(`target ${t.target}: ${t.value} against ${t.limit}: ${t.met ? "met" : "MISSED"}`);
  }
  const settings = { quick, seconds, rounds, ...workload, only: args.only ?? null };
  const machine = { cpus: navigator.hardwareConcurrency, deno: Deno.version.deno };
  if (args.json !== undefined) {
    await Deno.writeTextFile(
      args.json,
      JSON.stringify({ machine, settings, skipped, modes: report, targets }, null, 2),
    );
  }
  if (args.svg !== undefined) await Deno.writeTextFile(args.svg, throughputSvg(report));
  const missed = targets.filter((t) => !t.met);
  if (missed.length > 0) console.log(`missed ${missed.length} target(s)`);
  return !quick && args.only === undefined && missed.length > 0 ? 3 : 0;
}

Deno.exit(await main());
