import type { Permit } from "./permit.ts";
import { WeightedSemaphore } from "./weighted_semaphore.ts";

export interface SemaphoreOptions {
  /** How many holders at once, e.g. `upload_concurrency`. */
  permits: number;
  /** Bound on queued waiters. */
  waitersMax: number;
  name: string;
}

/** A count of permits with a strict FIFO queue: the per-class concurrency cap of the tier service. */
export class Semaphore {
  readonly #core: WeightedSemaphore;

  constructor(options: SemaphoreOptions) {
    this.#core = new WeightedSemaphore({
      capacity: options.permits,
      waitersMax: options.waitersMax,
      name: options.name,
    });
  }

  get permits(): number {
    return this.#core.capacity;
  }

  /** Gauge: permits currently held. */
  get inUse(): number {
    return this.#core.inUse;
  }

  /** Bound on queued callers; one more is refused. */
  get waitersMax(): number {
    return this.#core.waitersMax;
  }

  /** Gauge: callers waiting for a permit. */
  get waiting(): number {
    return this.#core.waiting;
  }

  acquire(signal?: AbortSignal): Promise<Permit> {
    return this.#core.acquire(1, signal);
  }

  tryAcquire(): Permit | null {
    return this.#core.tryAcquire(1);
  }
}
