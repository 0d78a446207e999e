import { assert } from "../assert.ts";
import { AbortedError } from "../wait_errors.ts";

/**
 * Time, injected. Production uses `RealClock`; core tests and the simulator use `VirtualClock`.
 * Every module that needs the time or a timer takes a `Clock`, so nothing outside the two
 * implementations calls `Date.now()`, `performance.now()` or `setTimeout`.
 */
export interface Clock {
  /** Monotonic milliseconds (fractional) since an arbitrary origin. */
  nowMs(): number;
  /** Monotonic microseconds since the same origin. */
  nowUs(): number;
  /** Wall-clock milliseconds since the Unix epoch, for timestamps that leave the process. */
  wallMs(): number;
  /** Calls `callback` once, `delayMs` from now. Returns a function that cancels it. */
  schedule(delayMs: number, callback: () => void): Cancel;
  /**
   * Calls `callback` every `intervalMs` until cancelled, each call due one interval after the one
   * before it started (a late call moves the ones after it; none is made up in a burst). One timer
   * serves every call, where rearming `schedule` would make a new one per call.
   */
  every(intervalMs: number, callback: () => void): Cancel;
  /** Resolves after `delayMs`; rejects with `AbortedError` if `signal` fires first. */
  sleep(delayMs: number, signal?: AbortSignal): Promise<void>;
}

export type Cancel = () => void;

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
