import { assert } from "./assert.ts";
import type { Cancel } from "./clock.ts";
import { AbortedError } from "./wait_errors.ts";

/** `sleep` built from a clock's `schedule`, shared by both clocks so abort behaves the same. */
export function sleepWith(
  schedule: (delayMs: number, callback: () => void) => Cancel,
  delayMs: number,
  signal?: AbortSignal,
): Promise<void> {
  if (signal?.aborted) return Promise.reject(new AbortedError("sleep", signal.reason));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      cancel();
      reject(new AbortedError("sleep", signal?.reason));
    };
    const cancel = schedule(delayMs, () => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    });
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * `every` built from a clock's `schedule`: the next call is armed once the callback returns, one
 * interval later, as a repeating real timer arms it. Shared by the virtual clocks.
 */
export function everyWith(
  schedule: (delayMs: number, callback: () => void) => Cancel,
  intervalMs: number,
  callback: () => void,
): Cancel {
  assert(intervalMs > 0, "Cannot repeat a timer: the interval must be positive");
  let cancelled = false;
  let cancelNext: Cancel = () => {};
  const fire = () => {
    callback();
    if (!cancelled) cancelNext = schedule(intervalMs, fire);
  };
  cancelNext = schedule(intervalMs, fire);
  return () => {
    cancelled = true;
    cancelNext();
  };
}
