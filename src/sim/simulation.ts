import { restart } from "./crash_restart.ts";
import { awaitGarbageCollection, awaitLiveness, stopFaults } from "./end_phases.ts";
import { readBack } from "./read_back.ts";
import { step } from "./run_step.ts";
import { buildProcess, createPartition } from "./sim_process.ts";
import { withTime } from "./virtual_time.ts";
import { drawStep, type WorkloadView } from "./workload_step.ts";
import { type SimOptions, World } from "./world.ts";
import { check, segmentLogKey } from "./world_checks.ts";

export interface SimResult {
  seed: number;
  scenario: string;
  ok: boolean;
  /** The first violated invariant, when one was. */
  violation: string | null;
  trail: readonly string[];
  traceHash: string;
  events: number;
  acknowledged: number;
  /** Messages acknowledged over the whole run, across purges, wipes and deletions. */
  acknowledgedTotal: number;
  crashes: number;
  /** Crashes that struck at a durable step of an eviction, by step (`crash_during_eviction`). */
  crashPoints: Record<string, number>;
  floor: number;
  /** Merged segments' objects in the store at the end (`{start}-{end}.log`): the merges the run made. */
  mergedObjects: number;
}

/**
 * One deterministic run: one seed decides the workload, the store's faults and latencies, and what
 * every crash keeps. The real log, tier service and chunk cache run on a `SimDisk`, the `sim` object
 * store and a `VirtualClock`. The workload draws a step, runs it, and checks the invariants, until
 * its steps are done or one fails; then the end phases check liveness, GC and the read-back.
 */
export async function runSimulation(o: SimOptions): Promise<SimResult> {
  const w = new World(o);
  w.meter.start();
  w.process = await buildProcess(w, await createPartition(w));
  w.nextAssign = w.process.partition.log.nextOffset;
  for (let i = 0; i < o.steps && w.violation === null; i++) {
    stopFaultsWhenDue(w);
    if (w.dead) await restart(w);
    const running = step(w, drawStep(w.workload, workloadView(w)));
    if (running !== undefined) await running;
    check(w);
  }
  w.faultsActive = false;
  if (w.dead && w.violation === null) await restart(w);
  await awaitLiveness(w);
  await awaitGarbageCollection(w);
  if (w.violation === null) await readBack(w);
  w.record(`end floor=${w.process.partition.superblock.tieredUpToOffset} acked=${w.acknowledgedBelow}`);
  w.meter.stop();
  // Its request in flight may wait on virtual time (a lost reply's timeout): time moves while it ends.
  await withTime(w, w.process.housekeeping.stop(), 120_000);
  await w.process.control.close().catch(() => {});
  return resultOf(w, o);
}

/** Stops the faults at the first step past the active part of the run. */
function stopFaultsWhenDue(w: World): void {
  if (w.clock.nowMs() >= w.activeUntilMs && (Object.keys(w.sim.faults).length > 0 || !w.options.tiered)) {
    stopFaults(w);
    w.record("faults stop");
  }
}

/** What drawing the next step may read of the world. */
function workloadView(w: World): WorkloadView {
  const log = w.process.partition.log;
  return {
    active: w.clock.nowMs() < w.activeUntilMs,
    scenario: w.scenario,
    logRange: () => log.stats(),
    undamagedRemoteSegments: () =>
      log.segments.filter((s) => s.location === "remote" && !w.sabotaged.has(s.startOffset)),
    storedLog: (startOffset) => {
      const segment = log.segments.find((s) => s.startOffset === startOffset);
      if (segment === undefined) return null;
      const key = segmentLogKey(w, segment);
      const object = w.sim.peek(key);
      return object === undefined ? null : { key, sizeBytes: object.bytes.length };
    },
  };
}

function resultOf(w: World, o: SimOptions): SimResult {
  return {
    seed: o.seed,
    scenario: o.scenario.name,
    ok: w.violation === null,
    violation: w.violation,
    trail: w.trace.trail,
    traceHash: w.trace.hash,
    events: w.trace.events,
    acknowledged: w.acknowledgedBelow,
    acknowledgedTotal: w.acknowledgedTotal,
    crashes: w.crashes,
    crashPoints: w.crashPoints,
    floor: w.process.partition.superblock.tieredUpToOffset,
    mergedObjects: w.sim.keys().filter((k) => /\/\d{20}-\d{20}\.log$/.test(k)).length,
  };
}
