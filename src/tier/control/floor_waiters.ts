import type { Cancel, Clock } from "../../runtime/clock/clock.ts";
import { QueueFullError } from "../../runtime/wait_errors.ts";

interface FloorWaiter {
  key: string;
  offset: number;
  resolve: (reached: boolean) => void;
  cancel: Cancel;
}

/** The `await` requests of a shard: each waits for a partition's floor to pass an offset, or times out. */
export class FloorWaiters {
  readonly #clock: Clock;
  readonly #waitersMax: number;
  readonly #waiters = new Set<FloorWaiter>();

  constructor(clock: Clock, waitersMax: number) {
    this.#clock = clock;
    this.#waitersMax = waitersMax;
  }

  get size(): number {
    return this.#waiters.size;
  }

  /** Resolves true once `wake` reports the floor of `key` at or past `offset`, false after `timeoutMs`. */
  wait(key: string, offset: number, timeoutMs: number): Promise<boolean> {
    if (this.#waiters.size >= this.#waitersMax) {
      return Promise.reject(new QueueFullError("await the floor", this.#waitersMax));
    }
    return new Promise((resolve) => {
      const waiter: FloorWaiter = {
        key,
        offset,
        resolve,
        cancel: this.#clock.schedule(timeoutMs, () => {
          this.#waiters.delete(waiter);
          resolve(false);
        }),
      };
      this.#waiters.add(waiter);
    });
  }

  /** The floor of `key` is now `floor`: every waiter it satisfies resolves true. */
  wake(key: string, floor: number): void {
    for (const w of this.#waiters) {
      if (w.key !== key || floor < w.offset) continue;
      w.cancel();
      this.#waiters.delete(w);
      w.resolve(true);
    }
  }
}
