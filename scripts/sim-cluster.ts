import { parseArgs } from "node:util";
import { failArgs as fail, intArg as int } from "./lib/sim_args.ts";
import { initCrc32c } from "../src/runtime/checksum/crc32c.ts";
import { clusterScenarios } from "../src/sim/cluster/cluster_scenarios.ts";
import { type ClusterSimResult, runClusterSimulation } from "../src/sim/cluster/cluster_simulation.ts";

/**
 * The deterministic simulator with three nodes, the simulated coordinator and network:
 *
 *   deno task sim:cluster --seed N --scenario NAME [--steps S] [--verbose]
 *   deno task sim:cluster --scenarios all|NAME,... --seeds K [--from S] [--steps S] [--json PATH]
 *
 * A step is 10 ms of virtual time (and, half the time, a produce). One seed decides everything; a
 * run's last line is `trace_hash=<hex>`. A failing run prints the seed, the scenario, the first
 * violated invariant and the trail before it, and the command exits 1. See docs/SIMULATOR.md.
 */

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    seed: { type: "string" },
    scenario: { type: "string" },
    scenarios: { type: "string" },
    seeds: { type: "string", default: "10" },
    from: { type: "string", default: "1" },
    steps: { type: "string", default: "1000" },
    json: { type: "string" },
    verbose: { type: "boolean", default: false },
  },
});

function report(r: ClusterSimResult, verbose: boolean): void {
  console.log(
    `seed=${r.seed} scenario=${r.scenario} ok=${r.ok} events=${r.events} acknowledged=${r.acknowledged} ` +
      `crashes=${r.crashes} floor=${r.floor} virtual_ms=${r.virtualMs} trace_hash=${r.traceHash}`,
  );
  if (!r.ok) {
    console.log(`VIOLATION seed=${r.seed} scenario=${r.scenario}: ${r.violation}`);
    console.log("trail (oldest first):");
    for (const event of r.trail) console.log(`  ${event}`);
    console.log(`replay: deno task sim:cluster --seed ${r.seed} --scenario ${r.scenario} --steps ${steps}`);
  } else if (verbose) {
    for (const event of r.trail) console.log(`  ${event}`);
  }
}

function scenarioOf(name: string) {
  const scenario = clusterScenarios[name];
  if (scenario === undefined) {
    fail(`Cannot run the simulator: no scenario ${name}; one of ${Object.keys(clusterScenarios).join(", ")}`);
  }
  return scenario;
}

await initCrc32c();
const steps = int("steps", args.steps, 1);
if (args.seed !== undefined) {
  const r = await runClusterSimulation({
    seed: int("seed", args.seed, 0),
    scenario: scenarioOf(args.scenario ?? ""),
    steps,
  });
  report(r, args.verbose);
  console.log(`trace_hash=${r.traceHash}`);
  Deno.exit(r.ok ? 0 : 1);
}
const names = args.scenarios === "all"
  ? Object.keys(clusterScenarios)
  : (args.scenarios ?? "").split(",").filter((x) => x);
if (names.length === 0) {
  fail("Cannot run the simulator: give --seed N --scenario NAME, or --scenarios all|NAME,...");
}
const from = int("from", args.from, 0);
const seeds = int("seeds", args.seeds, 1);
const startedMs = performance.now();
let runs = 0;
let violations = 0;
const failed: { seed: number; scenario: string; violation: string | null }[] = [];
for (const name of names) {
  const scenario = scenarioOf(name);
  for (let seed = from; seed < from + seeds; seed++) {
    const r = await runClusterSimulation({ seed, scenario, steps });
    runs++;
    if (!r.ok) {
      violations++;
      failed.push({ seed, scenario: name, violation: r.violation });
    }
    if (!r.ok || args.verbose) report(r, args.verbose);
  }
}
const seconds = (performance.now() - startedMs) / 1000;
console.log(`${runs} runs, ${violations} violations, ${seconds.toFixed(1)} s`);
if (args.json !== undefined) {
  await Deno.writeTextFile(
    args.json,
    JSON.stringify({ runs, violations, seconds, steps, from, seeds, names, failed }, null, 2),
  );
}
Deno.exit(violations === 0 ? 0 : 1);
