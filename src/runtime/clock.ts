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
