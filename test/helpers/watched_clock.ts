import type { Cancel } from "../../src/runtime/clock/clock.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";

/** Bound on the timers `scheduledFor` looks at before it gives up. */
const schedulesWatchedMax = 100_000;

/**
 * A VirtualClock that tells when a timer is scheduled. A test on virtual time over real I/O waits
 * with it for the code under test to arm its next timer (a GET's latency, a deadline) before it
 * moves time on, instead of giving the I/O real time and hoping it was enough.
 */
export class WatchedClock extends VirtualClock {
  #next: { scheduled: Promise<number>; resolve: (delayMs: number) => void } | null = null;

  override schedule(delayMs: number, callback: () => void): Cancel {
    const cancel = super.schedule(delayMs, callback);
    const next = this.#next;
    this.#next = null;
    next?.resolve(delayMs);
    return cancel;
  }

  /** Resolves with the delay of the next timer scheduled. */
  nextSchedule(): Promise<number> {
    if (this.#next === null) {
      let resolve!: (delayMs: number) => void;
      const scheduled = new Promise<number>((r) => (resolve = r));
      this.#next = { scheduled, resolve };
    }
    return this.#next.scheduled;
  }

  /** Resolves once a timer of `delayMs` is scheduled. */
  async scheduledFor(delayMs: number): Promise<void> {
    for (let seen = 0; seen < schedulesWatchedMax; seen++) {
      if (await this.nextSchedule() === delayMs) return;
    }
    throw new Error(`Cannot wait for a timer of ${delayMs} ms: ${schedulesWatchedMax} others came first`);
  }
}
