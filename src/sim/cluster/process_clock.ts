import { type Cancel, type Clock, everyWith, sleepWith } from "../../runtime/clock/clock.ts";
import type { VirtualClock } from "../../runtime/clock/virtual_clock.ts";

/** Bound on one process's timers pending at once; one more is a runaway loop in the code under test. */
export const processTimersMax = 100_000;

/**
 * One simulated process's view of the shared virtual clock. A crash kills it: every timer the
 * process armed is cancelled and none it arms later fires, so nothing of the dead process runs
 * again, as nothing of a killed process does; its sleeps never end.
 */
export class ProcessClock implements Clock {
  readonly #base: VirtualClock;
  readonly #cancels = new Set<Cancel>();
  #alive = true;

  constructor(base: VirtualClock) {
    this.#base = base;
  }

  get alive(): boolean {
    return this.#alive;
  }

  nowMs(): number {
    return this.#base.nowMs();
  }

  nowUs(): number {
    return this.#base.nowUs();
  }

  wallMs(): number {
    return this.#base.wallMs();
  }

  schedule(delayMs: number, callback: () => void): Cancel {
    if (!this.#alive) return () => {};
    if (this.#cancels.size >= processTimersMax) {
      throw new Error(`Cannot arm a timer: the process holds ${processTimersMax} already`);
    }
    const cancelBase = this.#base.schedule(delayMs, () => {
      this.#cancels.delete(cancel);
      if (this.#alive) callback();
    });
    const cancel = () => {
      this.#cancels.delete(cancel);
      cancelBase();
    };
    this.#cancels.add(cancel);
    return cancel;
  }

  every(intervalMs: number, callback: () => void): Cancel {
    return everyWith((d, cb) => this.schedule(d, cb), intervalMs, callback);
  }

  sleep(delayMs: number, signal?: AbortSignal): Promise<void> {
    return sleepWith((d, cb) => this.schedule(d, cb), delayMs, signal);
  }

  /** The process dies: its timers are cancelled, and none armed later fires. */
  kill(): void {
    this.#alive = false;
    for (const cancel of [...this.#cancels]) cancel();
    this.#cancels.clear();
  }
}
