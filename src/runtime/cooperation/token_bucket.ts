import { assert } from "../assert.ts";
import type { Cancel, Clock } from "../clock/clock.ts";
import { AbortedError, QueueFullError } from "../wait_errors.ts";

export interface TokenBucketOptions {
  /** Refill rate; `"unlimited"` never waits. */
  rateBytesPerSec: number | "unlimited";
  /** Most tokens the bucket holds; defaults to a fifth of a second's worth. */
  burstBytes?: number;
  /** Bound on queued requests. */
  waitersMax: number;
  name: string;
}

interface Waiter {
  bytes: number;
  resolve: () => void;
  reject: (error: Error) => void;
  detach: () => void;
}

/**
 * A byte-counted pacer. A request is charged its full size once, at admission, and waits in a
 * FIFO queue while the bucket is short. A request larger than the burst is admitted on credit once
 * the bucket is full: the balance goes negative and later refills repay the debt, so an oversized
 * request never deadlocks, and the long-run rate still holds.
 */
export class TokenBucket {
  readonly name: string;
  readonly rateBytesPerSec: number;
  readonly burstBytes: number;
  readonly unlimited: boolean;
  readonly waitersMax: number;
  readonly #clock: Clock;
  #tokens: number;
  #refilledAtMs: number;
  #queue: Waiter[] = [];
  #cancelTimer: Cancel | null = null;

  constructor(clock: Clock, options: TokenBucketOptions) {
    this.#clock = clock;
    this.name = options.name;
    this.waitersMax = options.waitersMax;
    this.unlimited = options.rateBytesPerSec === "unlimited";
    const rate = options.rateBytesPerSec === "unlimited" ? Infinity : options.rateBytesPerSec;
    assert(rate > 0, `${options.name} rate must be positive`);
    this.rateBytesPerSec = rate;
    this.burstBytes = options.burstBytes ?? (this.unlimited ? Infinity : Math.max(1, Math.floor(rate / 5)));
    assert(this.burstBytes >= 1, `${options.name} burst must be at least one byte`);
    this.#tokens = this.burstBytes;
    this.#refilledAtMs = clock.nowMs();
  }

  /** Gauge: the balance now (negative while in debt). */
  get tokens(): number {
    this.#refill();
    return this.#tokens;
  }

  /** Gauge: requests waiting for tokens. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** Admits `bytes` now if nothing is queued and the bucket can cover it; never waits. */
  tryTake(bytes: number): boolean {
    this.#checkBytes(bytes);
    if (this.unlimited) return true;
    this.#refill();
    if (this.#queue.length > 0 || !this.#covers(bytes)) return false;
    this.#tokens -= bytes;
    return true;
  }

  /** Resolves once `bytes` have been charged; rejects with `AbortedError` if `signal` fires first. */
  take(bytes: number, signal?: AbortSignal): Promise<void> {
    const what = `take ${bytes} bytes from ${this.name}`;
    if (signal?.aborted) return Promise.reject(new AbortedError(what, signal.reason));
    if (this.tryTake(bytes)) return Promise.resolve();
    if (this.#queue.length >= this.waitersMax) {
      return Promise.reject(new QueueFullError(what, this.waitersMax));
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.#queue = this.#queue.filter((w) => w !== waiter);
        reject(new AbortedError(what, signal?.reason));
        this.#drain();
      };
      const waiter: Waiter = {
        bytes,
        resolve,
        reject,
        detach: () => signal?.removeEventListener("abort", onAbort),
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#queue.push(waiter);
      this.#armTimer();
    });
  }

  #checkBytes(bytes: number): void {
    assert(Number.isInteger(bytes) && bytes >= 0, `${this.name} request must be a non-negative integer`);
  }

  /** A request up to the burst needs its full size; a larger one needs a full bucket. */
  #covers(bytes: number): boolean {
    return this.#tokens >= Math.min(bytes, this.burstBytes);
  }

  #refill(): void {
    const nowMs = this.#clock.nowMs();
    const elapsedMs = Math.max(0, nowMs - this.#refilledAtMs);
    this.#tokens = Math.min(this.burstBytes, this.#tokens + (elapsedMs * this.rateBytesPerSec) / 1000);
    this.#refilledAtMs = nowMs;
  }

  #drain(): void {
    this.#refill();
    while (this.#queue.length > 0 && this.#covers(this.#queue[0]!.bytes)) {
      const head = this.#queue.shift()!;
      head.detach();
      this.#tokens -= head.bytes;
      head.resolve();
    }
    this.#armTimer();
  }

  /** One timer at a time, set for the moment the head of the queue becomes coverable. */
  #armTimer(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = null;
    if (this.#queue.length === 0) return;
    const needed = Math.min(this.#queue[0]!.bytes, this.burstBytes) - this.#tokens;
    const delayMs = Math.max(0, Math.ceil((needed * 1000) / this.rateBytesPerSec));
    this.#cancelTimer = this.#clock.schedule(delayMs, () => {
      this.#cancelTimer = null;
      this.#drain();
    });
  }
}
