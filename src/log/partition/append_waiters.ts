import type { Cancel, Clock } from "../../runtime/clock/clock.ts";

/** Fetches waiting for one partition's next append at most; one more answers at once. */
export const appendWaitersMax = 4096;

/**
 * Long polls of one log waiting for its next published append: each resolves when the log's
 * visible end passes the offset it waits beyond, or when its wait is over, whichever comes first.
 * Bounded: past `appendWaitersMax` a wait resolves at once, and the fetch answers what it has.
 */
export class AppendWaiters {
  readonly #clock: Clock;
  readonly #waiters = new Set<{ afterOffset: number; wake: () => void }>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  get size(): number {
    return this.#waiters.size;
  }

  /** Resolves once `nextOffset()` is past `afterOffset`, or after `timeoutMs`. */
  wait(afterOffset: number, timeoutMs: number, nextOffset: () => number): Promise<void> {
    if (nextOffset() > afterOffset || timeoutMs <= 0 || this.#waiters.size >= appendWaitersMax) {
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      let cancel: Cancel = () => {};
      const waiter = {
        afterOffset,
        wake: () => {
          cancel();
          this.#waiters.delete(waiter);
          resolve();
        },
      };
      this.#waiters.add(waiter);
      cancel = this.#clock.schedule(timeoutMs, waiter.wake);
    });
  }

  /** The log published appends up to `nextOffset`: wakes the waits they satisfy. */
  published(nextOffset: number): void {
    for (const waiter of [...this.#waiters]) if (nextOffset > waiter.afterOffset) waiter.wake();
  }

  /** Wakes every wait (the log closes or is purged). */
  wakeAll(): void {
    for (const waiter of [...this.#waiters]) waiter.wake();
  }
}
