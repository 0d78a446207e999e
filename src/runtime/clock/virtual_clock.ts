import { assert } from "../assert.ts";
import { type Cancel, type Clock, everyWith, sleepWith } from "./clock.ts";

interface Timer {
  dueMs: number;
  seq: number;
  callback: () => void;
  cancelled: boolean;
}

/**
 * A clock that moves only when told to. `advance` fires due timers in (due time, creation) order,
 * setting the time to each timer's due time as it fires, so callbacks observe exact times.
 * `stall` moves time without firing anything: it stands for a synchronous stretch that blocked
 * the event loop, after which overdue timers fire late.
 */
export class VirtualClock implements Clock {
  #nowMs: number;
  #seq = 0;
  #timers: Timer[] = [];
  readonly #wallOriginMs: number;

  constructor(startMs = 0, wallOriginMs = 1_700_000_000_000) {
    this.#nowMs = startMs;
    this.#wallOriginMs = wallOriginMs;
  }

  nowMs(): number {
    return this.#nowMs;
  }

  nowUs(): number {
    return Math.round(this.#nowMs * 1000);
  }

  wallMs(): number {
    return this.#wallOriginMs + this.#nowMs;
  }

  schedule(delayMs: number, callback: () => void): Cancel {
    const timer: Timer = {
      dueMs: this.#nowMs + Math.max(0, delayMs),
      seq: this.#seq++,
      callback,
      cancelled: false,
    };
    this.#timers.push(timer);
    return () => {
      timer.cancelled = true;
    };
  }

  every(intervalMs: number, callback: () => void): Cancel {
    return everyWith((d, cb) => this.schedule(d, cb), intervalMs, callback);
  }

  sleep(delayMs: number, signal?: AbortSignal): Promise<void> {
    return sleepWith((d, cb) => this.schedule(d, cb), delayMs, signal);
  }

  /** Number of timers not yet fired or cancelled. */
  pendingTimers(): number {
    return this.#timers.filter((t) => !t.cancelled).length;
  }

  /** Due time of the earliest pending timer, or null when none is pending. */
  nextDueMs(): number | null {
    const next = this.#earliest();
    return next === null ? null : next.dueMs;
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  advance(ms: number): void {
    assert(ms >= 0, "VirtualClock.advance needs a non-negative duration");
    const targetMs = this.#nowMs + ms;
    // A timer may schedule further timers; the bound keeps a zero-delay loop from spinning forever.
    const firingsMax = 1_000_000;
    for (let firings = 0;; firings++) {
      assert(firings < firingsMax, "VirtualClock.advance fired too many timers in one call");
      const next = this.#earliest();
      if (next === null || next.dueMs > targetMs) break;
      this.#remove(next);
      this.#nowMs = Math.max(this.#nowMs, next.dueMs);
      next.callback();
    }
    this.#nowMs = targetMs;
  }

  /** Moves time forward by `ms` without firing timers: a simulated synchronous stall. */
  stall(ms: number): void {
    assert(ms >= 0, "VirtualClock.stall needs a non-negative duration");
    this.#nowMs += ms;
  }

  #earliest(): Timer | null {
    this.#timers = this.#timers.filter((t) => !t.cancelled);
    let best: Timer | null = null;
    for (const t of this.#timers) {
      if (best === null || t.dueMs < best.dueMs || (t.dueMs === best.dueMs && t.seq < best.seq)) {
        best = t;
      }
    }
    return best;
  }

  #remove(timer: Timer): void {
    this.#timers = this.#timers.filter((t) => t !== timer);
  }
}
