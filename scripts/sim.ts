import { parseArgs } from "node:util";
import { failArgs as fail, intArg as int } from "./lib/sim_args.ts";
import { initCrc32c } from "../src/runtime/checksum/crc32c.ts";
import { scenarios } from "../src/sim/scenarios.ts";
import { runSimulation, type SimResult } from "../src/sim/simulation.ts";

/**
 * The deterministic simulator:
 *
 *   deno task sim --seed N --scenario NAME [--ticks T] [--verbose]
 *   deno task sim --scenarios all --seeds K [--from S] [--ticks T]
 *
 * `--ticks` (or `--steps`) is the workload's length in steps of the simulated shard:
 * each a produce, a poll, an event of the scenario, or 10 ms of virtual time with the tick.
 *
 * One seed decides everything; a run's last line is `trace_hash=<hex>`. A failing run prints the
 * seed, the scenario, the first violated invariant and the trail of events before it, and the
 * command exits 1. See docs/SIMULATOR.md.
 */

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    seed: { type: "string" },
    scenario: { type: "string" },
    scenarios: { type: "string" },
    seeds: { type: "string", default: "10" },
    from: { type: "string", default: "1" },
    steps: { type: "string" },
    ticks: { type: "string" },
    verbose: { type: "boolean", default: false },
  },
});

function report(r: SimResult, verbose: boolean): void {
  const line =
    `seed=${r.seed} scenario=${r.scenario} ok=${r.ok} events=${r.events} acknowledged=${r.acknowledged} ` +
    `crashes=${r.crashes} floor=${r.floor} trace_hash=${r.traceHash}`;
  console.log(line);
  if (!r.ok) {
    console.log(`VIOLATION seed=${r.seed} scenario=${r.scenario}: ${r.violation}`);
    console.log("trail (oldest first):");
    for (const event of r.trail) console.log(`  ${event}`);
    console.log(`replay: deno task sim --seed ${r.seed} --scenario ${r.scenario} --ticks ${steps}`);
  } else if (verbose) {
    for (const event of r.trail) console.log(`  ${event}`);
  }
}

await initCrc32c();
if (args.steps !== undefined && args.ticks !== undefined) {
  fail("Cannot run: give --ticks or --steps, not both");
}
const steps = int(args.ticks !== undefined ? "ticks" : "steps", args.ticks ?? args.steps ?? "2000", 1);
if (args.seed !== undefined) {
  const scenario = scenarios[args.scenario ?? ""];
  if (scenario === undefined) {
    fail(`Cannot run the simulator: --scenario must be one of ${Object.keys(scenarios).join(", ")}`);
  }
  const r = await runSimulation({ seed: int("seed", args.seed, 0), scenario, steps });
  report(r, args.verbose);
  console.log(`trace_hash=${r.traceHash}`);
  Deno.exit(r.ok ? 0 : 1);
}
const names = args.scenarios === "all"
  ? Object.keys(scenarios)
  : (args.scenarios ?? "").split(",").filter((x) => x);
if (names.length === 0) {
  fail("Cannot run the simulator: give --seed N --scenario NAME, or --scenarios all|NAME,...");
}
for (const name of names) {
  if (scenarios[name] === undefined) fail(`Cannot run the simulator: unknown scenario ${name}`);
}
const from = int("from", args.from, 0);
const count = int("seeds", args.seeds, 1);
let failures = 0;
for (const name of names) {
  for (let seed = from; seed < from + count; seed++) {
    const r = await runSimulation({ seed, scenario: scenarios[name]!, steps });
    if (!r.ok || args.verbose) report(r, false);
    if (!r.ok) failures++;
  }
  console.log(`${name}: ${count} seeds from ${from}, ${failures} failing so far`);
}
console.log(`${failures} failing runs`);
Deno.exit(failures === 0 ? 0 : 1);
