import { settle } from "../virtual_time.ts";
import { clusterStepMs } from "./cluster_settings.ts";
import type { ClusterWorld } from "./cluster_world.ts";

/** One step: the tasks due run, the clock moves on (every process's timers fire), and the I/O settles. */
export async function advance(w: ClusterWorld): Promise<void> {
  w.runDueTasks();
  w.clock.advance(clusterStepMs);
  await settle();
}

/** Steps until `condition` holds; false when it still does not after `deadlineMs` of virtual time. */
export async function until(w: ClusterWorld, condition: () => boolean, deadlineMs: number): Promise<boolean> {
  const endMs = w.clock.nowMs() + deadlineMs;
  while (!condition()) {
    if (w.clock.nowMs() >= endMs) return false;
    await advance(w);
  }
  return true;
}

/** Waits for `promise` while virtual time moves on; null when it is still pending after `maxMs`. */
export async function withTime<T>(
  w: ClusterWorld,
  promise: Promise<T>,
  maxMs: number,
): Promise<{ value: T } | null> {
  let outcome: { value: T } | { error: unknown } | null = null;
  promise.then((value) => (outcome = { value }), (error) => (outcome = { error }));
  await settle();
  await until(w, () => outcome !== null, maxMs);
  const settled = outcome as { value: T } | { error: unknown } | null;
  if (settled === null) return null;
  if ("error" in settled) throw settled.error;
  return settled;
}
