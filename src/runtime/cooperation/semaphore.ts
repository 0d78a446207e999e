import { assert } from "../assert.ts";
import { AbortedError, QueueFullError } from "../wait_errors.ts";

/**
 * A held share of a semaphore. `release()` gives it back and must be called exactly once: a
 * second call is a bug and throws. `using permit = await sem.acquire()` releases it at the end of
 * the scope unless it was already released explicitly, so early release and `using` combine.
 */
export class Permit implements Disposable {
  #released = false;
  readonly weight: number;
  readonly #onRelease: (weight: number) => void;

  constructor(weight: number, onRelease: (weight: number) => void) {
    this.weight = weight;
    this.#onRelease = onRelease;
  }

  get released(): boolean {
    return this.#released;
  }

  release(): void {
    assert(!this.#released, "Cannot release a permit twice");
    this.#released = true;
    this.#onRelease(this.weight);
  }

  [Symbol.dispose](): void {
    if (!this.#released) this.release();
  }
}

interface Waiter {
  weight: number;
  resolve: (permit: Permit) => void;
  reject: (error: Error) => void;
  detach: () => void;
}

export interface WeightedSemaphoreOptions {
  /** Total weight that may be held at once. */
  capacity: number;
  /** Bound on queued waiters; an acquire beyond it fails with `QueueFullError`. */
  waitersMax: number;
  /** Used in error messages, e.g. "upload slot". */
  name: string;
}

/**
 * The single-threaded permit core shared by `Semaphore` and `ByteSemaphore`. Admission is strict
 * FIFO: only the head of the queue is considered, so a large request is never overtaken by a
 * stream of small ones (no barging). A request heavier than the whole capacity is admitted when
 * it is at the head and nothing is held, so it can never deadlock.
 */
export class WeightedSemaphore {
  readonly capacity: number;
  readonly waitersMax: number;
  readonly name: string;
  #inUse = 0;
  #queue: Waiter[] = [];

  constructor(options: WeightedSemaphoreOptions) {
    assert(
      Number.isInteger(options.capacity) && options.capacity >= 1,
      `${options.name} capacity must be a positive integer`,
    );
    assert(
      Number.isInteger(options.waitersMax) && options.waitersMax >= 0,
      `${options.name} waitersMax must be a non-negative integer`,
    );
    this.capacity = options.capacity;
    this.waitersMax = options.waitersMax;
    this.name = options.name;
  }

  /** Weight currently held. */
  get inUse(): number {
    return this.#inUse;
  }

  /** Requests queued and not yet admitted. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** Weight queued and not yet admitted. */
  get waitingWeight(): number {
    return this.#queue.reduce((sum, w) => sum + w.weight, 0);
  }

  /** Admits at once or returns null; never jumps ahead of queued waiters. */
  tryAcquire(weight: number): Permit | null {
    this.#checkWeight(weight);
    if (this.#queue.length > 0 || !this.#fits(weight)) return null;
    return this.#grant(weight);
  }

  acquire(weight: number, signal?: AbortSignal): Promise<Permit> {
    this.#checkWeight(weight);
    const what = `acquire ${this.name}`;
    if (signal?.aborted) return Promise.reject(new AbortedError(what, signal.reason));
    const immediate = this.tryAcquire(weight);
    if (immediate !== null) return Promise.resolve(immediate);
    if (this.#queue.length >= this.waitersMax) {
      return Promise.reject(new QueueFullError(what, this.waitersMax));
    }
    return new Promise<Permit>((resolve, reject) => {
      const onAbort = () => {
        this.#queue = this.#queue.filter((w) => w !== waiter);
        reject(new AbortedError(what, signal?.reason));
        // The aborted waiter may have been the head that blocked smaller ones behind it.
        this.#drain();
      };
      const waiter: Waiter = {
        weight,
        resolve,
        reject,
        detach: () => signal?.removeEventListener("abort", onAbort),
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#queue.push(waiter);
    });
  }

  #checkWeight(weight: number): void {
    assert(Number.isInteger(weight) && weight >= 1, `${this.name} weight must be a positive integer`);
  }

  #fits(weight: number): boolean {
    if (weight > this.capacity) return this.#inUse === 0;
    return this.#inUse + weight <= this.capacity;
  }

  #grant(weight: number): Permit {
    this.#inUse += weight;
    return new Permit(weight, (w) => this.#release(w));
  }

  #release(weight: number): void {
    assert(this.#inUse >= weight, `${this.name} released more than it holds`);
    this.#inUse -= weight;
    this.#drain();
  }

  #drain(): void {
    // Each pass admits one waiter; the queue length bounds the loop.
    while (this.#queue.length > 0 && this.#fits(this.#queue[0]!.weight)) {
      const head = this.#queue.shift()!;
      head.detach();
      head.resolve(this.#grant(head.weight));
    }
  }
}

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
