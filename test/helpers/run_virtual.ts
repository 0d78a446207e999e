import { settlesWithin } from "./wait_for.ts";
import type { WatchedClock } from "./watched_clock.ts";

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Settles `promise` by jumping the virtual clock from timer to timer, letting callbacks run
 * between jumps. When no timer is due, the promise waits on real work (a file, a WebAssembly
 * instantiation), which ends by settling it or by arming a timer: that is waited for, for at most
 * `realWaitMs` of real time. Bounded: it gives up after `stepsMax` jumps.
 */
export async function runVirtual<T>(
  clock: WatchedClock,
  promise: Promise<T>,
  stepsMax = 100_000,
  realWaitMs = 10_000,
): Promise<T> {
  let settled = false;
  const watched = promise.finally(() => {
    settled = true;
  });
  const ended = watched.then(() => {}, () => {});
  for (let step = 0; step < stepsMax && !settled; step++) {
    await flush();
    if (settled) break;
    const next = clock.nextDueMs();
    if (next === null) {
      await settlesWithin(
        Promise.race([ended, clock.nextSchedule()]),
        "the promise to settle or arm a timer while no timer is due",
        realWaitMs,
      );
      continue;
    }
    clock.advance(Math.max(0, next - clock.nowMs()));
  }
  if (!settled) {
    throw new Error(`Cannot settle the promise: still pending after ${stepsMax} jumps of the clock`);
  }
  return await watched;
}
