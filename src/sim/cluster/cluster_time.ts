import { clusterStepMs } from "./cluster_settings.ts";
import type { ClusterWorld } from "./cluster_world.ts";

/** Loop turns that settle the simulated I/O in flight after a step of the clock. */
const settleTurns = 30;

/** Simulated I/O completes in promise callbacks: a bounded number of loop turns settles it. */
export async function settle(): Promise<void> {
  for (let i = 0; i < settleTurns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

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
