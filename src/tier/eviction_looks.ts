import { keepLocalWithin, overshootBytes } from "../log/local_retention.ts";
import { assert } from "../runtime/assert.ts";
import { PacedSweep } from "../runtime/paced_sweep.ts";
import type { TieredPartition } from "./tiered_partition.ts";

/** How often every partition's eviction and local pressure are looked at. */
const evictionCheckIntervalMs = 1000;

/** Bound on the partitions one tick's share of the eviction sweep looks at. */
const evictionLooksPerTickMax = 256;

/**
 * Which partitions a tick looks at for eviction and local pressure: one at the next tick after its
 * floor moved or its log was active (`touch`), and every partition once a second, a share per tick
 * (`PacedSweep`), since envelopes by age move with time alone; not every partition on every tick,
 * which is the pump's hot path. It also keeps each partition's overshoot as its last look found it,
 * and their sum, for the gauge.
 */
export class EvictionLooks {
  readonly #touched = new Set<string>();
  readonly #sweep: PacedSweep<string>;
  readonly #overshootBytes = new Map<string, number>();
  #overshootTotalBytes = 0;

  constructor(tickIntervalMs: number) {
    this.#sweep = new PacedSweep({
      periodMs: evictionCheckIntervalMs,
      tickIntervalMs: Math.min(tickIntervalMs, evictionCheckIntervalMs),
      perTickMax: evictionLooksPerTickMax,
    });
  }

  /** The sum of each partition's overshoot as its last look found it (at most a second old). */
  get overshootTotalBytes(): number {
    return this.#overshootTotalBytes;
  }

  add(key: string): void {
    this.#sweep.add(key);
  }

  remove(key: string): void {
    this.#sweep.delete(key);
    this.#touched.delete(key);
    this.#noteOvershoot(key, 0);
  }

  /** The next tick looks at this partition. */
  touch(key: string): void {
    this.#touched.add(key);
  }

  /** The partitions this tick looks at, each passed to `look` after its overshoot is noted. */
  onTick(
    partitions: ReadonlyMap<string, TieredPartition>,
    nowMs: number,
    wallMs: number,
    look: (p: TieredPartition) => void,
  ): void {
    const share = this.#sweep.next(nowMs);
    if (this.#touched.size === 0 && share.length === 0) return;
    const keys = new Set([...this.#touched, ...share]);
    this.#touched.clear();
    for (const key of keys) {
      const p = partitions.get(key);
      if (p === undefined) continue;
      const keepLocal = keepLocalWithin(p.envelope(), wallMs * 1000);
      this.#noteOvershoot(key, overshootBytes(p.partition.log.segments, keepLocal));
      look(p);
    }
  }

  #noteOvershoot(key: string, bytes: number): void {
    this.#overshootTotalBytes += bytes - (this.#overshootBytes.get(key) ?? 0);
    if (bytes === 0) this.#overshootBytes.delete(key);
    else this.#overshootBytes.set(key, bytes);
    assert(this.#overshootTotalBytes >= 0, "the overshoot total cannot go below 0");
  }
}
