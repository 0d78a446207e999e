import { assert } from "../assert.ts";
import { type Cancel, type Clock, sleepWith } from "./clock.ts";

/** The production clock: `performance.now()` for monotonic time, `setTimeout` and `setInterval` for timers. */
export class RealClock implements Clock {
  nowMs(): number {
    return performance.now();
  }

  nowUs(): number {
    return Math.round(performance.now() * 1000);
  }

  wallMs(): number {
    return Date.now();
  }

  schedule(delayMs: number, callback: () => void): Cancel {
    // Rounded up: a timer that fired early would make the pump report a lateness of zero.
    const handle = setTimeout(callback, Math.max(0, Math.ceil(delayMs)));
    return () => clearTimeout(handle);
  }

  every(intervalMs: number, callback: () => void): Cancel {
    assert(intervalMs >= 1, "Cannot repeat a timer: the interval must be at least 1 ms");
    const handle = setInterval(callback, Math.ceil(intervalMs));
    return () => clearInterval(handle);
  }

  sleep(delayMs: number, signal?: AbortSignal): Promise<void> {
    return sleepWith((d, cb) => this.schedule(d, cb), delayMs, signal);
  }
}
