import type { Partition } from "../log/partition/partition.ts";
import { evictionStep } from "./eviction_steps.ts";
import * as inv from "./invariants.ts";
import { IoScheduler } from "./io_scheduler.ts";
import { buildProcess, createPartition, openPartition } from "./sim_process.ts";
import { cacheDir, dataPath } from "./sim_settings.ts";
import type { World } from "./world.ts";
import { check } from "./world_checks.ts";

/** The chance that a crash strikes before a durable step of an eviction, where the scenario asks for it. */
const crashAtEvictionStepChance = 0.05;

/**
 * A new process's view of the disk. It counts the bytes each read and write moves, and, where the
 * scenario asks for it, may crash the process just before a durable step of an eviction.
 */
export function processDisk(w: World): IoScheduler {
  return new IoScheduler(w.raw, w.completionRng, (bytes) => w.meter.add(bytes), (name, path) => {
    const step = evictionStep(name, path, w.lastEvictionStep);
    if (step === null) return;
    w.lastEvictionStep = step;
    if (
      !w.dead && w.faultsActive && !w.sequenceRunning && w.scenario.crashAtEvictionSteps &&
      w.crashPointRng.chance(crashAtEvictionStepChance)
    ) {
      w.crashPoints[step] = (w.crashPoints[step] ?? 0) + 1;
      die(w, `crash before ${step}`);
    }
  });
}

/**
 * The process dies at once: the disk keeps what a crash keeps, and nothing of the dead process
 * touches it again. Synchronous, so that it can strike in the middle of a disk operation.
 */
export function die(w: World, what: string): void {
  w.crashes++;
  w.processNo++;
  w.dead = true;
  w.record(what);
  // The dead process starts nothing new; a request it had in flight may still land in the store.
  void w.process.housekeeping.stop();
  w.disk.revoke();
  w.raw.crash();
}

/** A crash and the restart; `wipe` also loses the data directory (a new disk), so a new incarnation begins. */
export async function crash(w: World, wipe: boolean): Promise<void> {
  die(w, wipe ? "crash, data directory wiped" : "crash");
  await restart(w, wipe);
}

/**
 * Runs a sequence (a purge, a deletion, a restart) to its end with the crashes that strike inside
 * disk operations held off.
 */
export async function inSequence(w: World, sequence: () => Promise<void>): Promise<void> {
  w.sequenceRunning = true;
  try {
    await sequence();
  } finally {
    w.sequenceRunning = false;
  }
}

/** The restarted process: recovery from what the crash kept, then new components on it. */
export function restart(w: World, wipe = false): Promise<void> {
  return inSequence(w, () => restartNow(w, wipe));
}

async function restartNow(w: World, wipe: boolean): Promise<void> {
  w.dead = false;
  w.disk = processDisk(w);
  if (w.scenario.wipeCacheOnCrash) await w.raw.removeTree(cacheDir);
  if (wipe) {
    await w.raw.removeTree(dataPath);
    w.process = await buildProcess(w, await createPartition(w));
    w.restartFromEmpty();
    return;
  }
  let partition: Partition;
  try {
    partition = await openPartition(w);
  } catch (error) {
    // Refusing a partition after a crash means the durable state was not what the code assumed.
    w.fail(`after a crash the partition could not be opened: ${(error as Error).message}`);
    return;
  }
  w.process = await buildProcess(w, partition);
  for (const [name, c] of w.consumers) {
    const now = partition.offsets.get(name);
    w.fail(inv.consumerOffsetDurable(name, now, c.acknowledged, c.inFlight));
    w.consumers.set(name, { acknowledged: now, inFlight: [] });
  }
  w.nextAssign = partition.log.nextOffset;
  w.fail(
    w.nextAssign < w.acknowledgedBelow
      ? `after the crash the log ends at ${w.nextAssign}, below acknowledged ${w.acknowledgedBelow}`
      : null,
  );
  check(w);
}
