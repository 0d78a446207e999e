import * as inv from "./invariants.ts";
import { incarnationPath } from "../tier/bucket/object_keys.ts";
import { gcWindowMs, recoveryMs, stepMs } from "./sim_settings.ts";
import { advance } from "./virtual_time.ts";
import type { World } from "./world.ts";
import { check, liveIncarnation, optionsChanged } from "./world_checks.ts";

/** Steps of virtual time between two looks at the bucket in the GC window. */
const gcStepsPerLook = 10;

/** The store's faults stop, and tiering is on again for what follows. */
export function stopFaults(w: World): void {
  w.sim.faults = {};
  w.options.tiered = true;
  optionsChanged(w);
}

/** The end of the last sealed segment, null when none is sealed. */
function lastSealedEnd(w: World): number | null {
  return w.process.partition.log.segments.filter((s) => s.sealed).at(-1)?.endOffset ?? null;
}

/** Liveness: with the faults gone (and tiering on), the floor reaches the last sealed segment in time. */
export async function awaitLiveness(w: World): Promise<void> {
  stopFaults(w);
  for (let waited = 0; waited < recoveryMs && w.violation === null; waited += stepMs) {
    const sealedEnd = lastSealedEnd(w);
    if (sealedEnd === null || w.process.partition.superblock.tieredUpToOffset > sealedEnd) break;
    await advance(w);
    check(w);
  }
  w.fail(inv.caughtUp(w.process.partition.superblock.tieredUpToOffset, lastSealedEnd(w)));
}

/** Objects in the bucket outside the live incarnation, as a violation; null when there are none. */
function orphansLeft(w: World): string | null {
  return inv.orphansCollected(w.sim.keys(), [incarnationPath(liveIncarnation(w))]);
}

/** GC: given several sweeps past the grace, every object of a dead incarnation is gone. */
export async function awaitGarbageCollection(w: World): Promise<void> {
  for (let waited = 0; waited < gcWindowMs && w.violation === null; waited += stepMs * gcStepsPerLook) {
    for (let i = 0; i < gcStepsPerLook; i++) await advance(w);
    check(w);
    if (orphansLeft(w) === null) break;
  }
  w.fail(orphansLeft(w));
}
