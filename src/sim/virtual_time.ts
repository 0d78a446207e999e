import { stepMs } from "./sim_settings.ts";
import { tickProcess } from "./sim_process.ts";
import type { World } from "./world.ts";

/** Loop turns that settle the simulated I/O in flight: each completes after a few promise hops. */
const settleTurns = 30;

/** Simulated I/O completes in promise callbacks: a bounded number of loop turns settles it. */
export async function settle(): Promise<void> {
  for (let i = 0; i < settleTurns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** One step of virtual time: the clock moves on, the shard ticks, and the I/O it started settles. */
export async function advance(w: World): Promise<void> {
  w.clock.advance(stepMs);
  tickProcess(w.process, w.clock.nowMs());
  await settle();
}

/**
 * Waits for `promise` while virtual time moves on (fetches wait on retries and timeouts of the
 * virtual clock); null when it is still pending after `maxMs`. A rejection is thrown.
 */
export async function withTime<T>(
  w: World,
  promise: Promise<T>,
  maxMs: number,
): Promise<{ value: T } | null> {
  let outcome: { value: T } | { error: unknown } | null = null;
  promise.then((value) => (outcome = { value }), (error) => (outcome = { error }));
  for (let waited = 0; outcome === null && waited <= maxMs; waited += stepMs) {
    await settle();
    if (outcome === null) await advance(w);
  }
  const settled = outcome as { value: T } | { error: unknown } | null;
  if (settled === null) return null;
  if ("error" in settled) throw settled.error;
  return settled;
}
