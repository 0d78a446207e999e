import { assert } from "./assert.ts";

/**
 * A periodic visit of every key, spread over the period's ticks instead of done in one: each tick
 * takes the next `ceil(size × tickIntervalMs / periodMs)` keys of a round, so every key is visited
 * about once per period and no tick visits more than that share (at most `perTickMax`). Duties that
 * depend on time passing (age-based retention and eviction) use it, so that ten thousand keys cost
 * each tick a hundredth of them, not all of them. Keys join and leave at any time; one that joins
 * is visited from the next round.
 */
export class PacedSweep<K> {
  readonly #periodMs: number;
  readonly #tickIntervalMs: number;
  readonly #perTickMax: number;
  readonly #keys = new Set<K>();
  #round: K[] = [];
  #cursor = 0;
  #roundStartedMs = -Infinity;

  constructor(options: { periodMs: number; tickIntervalMs: number; perTickMax: number }) {
    assert(options.periodMs >= options.tickIntervalMs, "a sweep's period must be at least one tick");
    assert(options.tickIntervalMs > 0 && options.perTickMax >= 1, "a sweep needs a tick and a share");
    this.#periodMs = options.periodMs;
    this.#tickIntervalMs = options.tickIntervalMs;
    this.#perTickMax = options.perTickMax;
  }

  get size(): number {
    return this.#keys.size;
  }

  add(key: K): void {
    this.#keys.add(key);
  }

  delete(key: K): void {
    this.#keys.delete(key);
  }

  /**
   * This tick's share of the round. A round starts a period after the last one started, or when
   * the last one ends if that is later; between the two, ticks take nothing.
   */
  next(nowMs: number): K[] {
    if (this.#cursor >= this.#round.length) {
      if (nowMs - this.#roundStartedMs < this.#periodMs) return [];
      this.#round = [...this.#keys];
      this.#cursor = 0;
      this.#roundStartedMs = nowMs;
    }
    const ticksPerPeriod = Math.max(1, Math.floor(this.#periodMs / this.#tickIntervalMs));
    const share = Math.min(this.#perTickMax, Math.max(1, Math.ceil(this.#round.length / ticksPerPeriod)));
    const taken: K[] = [];
    while (taken.length < share && this.#cursor < this.#round.length) {
      const key = this.#round[this.#cursor++]!;
      // A key that left since the round began is skipped, not visited.
      if (this.#keys.has(key)) taken.push(key);
    }
    return taken;
  }
}
