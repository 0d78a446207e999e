import type { Permit } from "./permit.ts";
import { WeightedSemaphore } from "./weighted_semaphore.ts";

export interface ByteSemaphoreOptions {
  capacityBytes: number;
  waitersMax: number;
  name: string;
}

/**
 * Permits counted in bytes: the cache's reserve-before-download. A request larger than the whole
 * capacity is admitted once it is first in line and nothing else is held, so it never deadlocks.
 */
export class ByteSemaphore {
  readonly #core: WeightedSemaphore;

  constructor(options: ByteSemaphoreOptions) {
    this.#core = new WeightedSemaphore({
      capacity: options.capacityBytes,
      waitersMax: options.waitersMax,
      name: options.name,
    });
  }

  get capacityBytes(): number {
    return this.#core.capacity;
  }

  /** Gauge: bytes currently reserved. */
  get inUseBytes(): number {
    return this.#core.inUse;
  }

  /** Gauge: requests waiting. */
  get waiting(): number {
    return this.#core.waiting;
  }

  /** Gauge: bytes requested by waiters. */
  get waitingBytes(): number {
    return this.#core.waitingWeight;
  }

  acquire(bytes: number, signal?: AbortSignal): Promise<Permit> {
    return this.#core.acquire(bytes, signal);
  }

  tryAcquire(bytes: number): Permit | null {
    return this.#core.tryAcquire(bytes);
  }
}
