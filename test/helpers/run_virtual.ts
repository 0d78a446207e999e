import type { VirtualClock } from "../../src/runtime/virtual_clock.ts";

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Settles `promise` by jumping the virtual clock from timer to timer, letting callbacks run
 * between jumps. Bounded: it gives up after `stepsMax` jumps.
 */
export async function runVirtual<T>(
  clock: VirtualClock,
  promise: Promise<T>,
  stepsMax = 100_000,
): Promise<T> {
  let settled = false;
  const watched = promise.finally(() => {
    settled = true;
  });
  watched.catch(() => {});
  for (let step = 0; step < stepsMax && !settled; step++) {
    await flush();
    if (settled) break;
    const next = clock.nextDueMs();
    if (next === null) {
      // No virtual timer is due: the promise may be waiting on real asynchronous work (a
      // WebAssembly instantiation, a file): give it up to a second of real time.
      for (let wait = 0; wait < 200 && !settled && clock.nextDueMs() === null; wait++) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      if (!settled && clock.nextDueMs() === null) {
        throw new Error("runVirtual: nothing left to run but the promise has not settled");
      }
      continue;
    }
    clock.advance(Math.max(0, next - clock.nowMs()));
  }
  return await watched;
}
