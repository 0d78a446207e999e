import {
  keepLocalWithin,
  type LocalEnvelope,
  nextLocalAgeOutUs,
  overshootBytes,
} from "../log/local_retention.ts";
import { assert } from "../runtime/assert.ts";
import { DueLooks } from "../runtime/due_looks.ts";
import type { TieredPartition } from "./tiered_partition.ts";

/** Longest time between two looks at a partition nothing happened to: a safety net under the due looks. */
export const evictionIdleLookIntervalMs = 300_000;

/** When a look started an eviction pass (at most a bounded number of segments), the next look. */
export const evictionRecheckMs = 1000;

/** Bound on the partitions one tick's due looks take (touched ones come on top). */
const evictionDueLooksPerTickMax = 256;

/**
 * Which partitions a tick looks at for eviction and local pressure: one at the next tick after its
 * floor moved or its log was active (`touch`), and one whose look is due: when its oldest local
 * segment leaves the age envelope, a second after a look that started an eviction pass, and at the
 * latest `evictionIdleLookIntervalMs` after its last look. Not every partition on every tick, nor
 * every partition every second: an idle shard's tick looks at a handful. It also keeps each
 * partition's overshoot as its last look found it, and their sum, for the gauge.
 */
export class EvictionLooks {
  readonly #looks = new DueLooks<string>({
    idleLookIntervalMs: evictionIdleLookIntervalMs,
    dueLooksPerTickMax: evictionDueLooksPerTickMax,
  });
  readonly #overshootBytes = new Map<string, number>();
  #overshootTotalBytes = 0;

  /** The sum of each partition's overshoot as its last look found it. */
  get overshootTotalBytes(): number {
    return this.#overshootTotalBytes;
  }

  /** A partition joins; it is looked at from the next tick. */
  add(key: string, nowMs: number): void {
    this.#looks.add(key, nowMs);
  }

  remove(key: string): void {
    this.#looks.remove(key);
    this.#noteOvershoot(key, 0);
  }

  /** The next tick looks at this partition. */
  touch(key: string): void {
    this.#looks.touch(key);
  }

  /**
   * The partitions this tick looks at, each passed to `look` after its overshoot is noted; `look`
   * says whether it started an eviction pass.
   */
  onTick(
    partitions: ReadonlyMap<string, TieredPartition>,
    nowMs: number,
    wallMs: number,
    look: (p: TieredPartition) => boolean,
  ): void {
    for (const key of this.#looks.take(nowMs)) {
      const p = partitions.get(key);
      if (p === undefined) continue;
      const envelope = p.envelope();
      const keepLocal = keepLocalWithin(envelope, wallMs * 1000);
      this.#noteOvershoot(key, overshootBytes(p.partition.log.segments, keepLocal));
      const started = look(p);
      this.#looks.bringForward(key, nextLookMs(p, envelope, nowMs, wallMs, started));
    }
  }

  #noteOvershoot(key: string, bytes: number): void {
    this.#overshootTotalBytes += bytes - (this.#overshootBytes.get(key) ?? 0);
    if (bytes === 0) this.#overshootBytes.delete(key);
    else this.#overshootBytes.set(key, bytes);
    assert(this.#overshootTotalBytes >= 0, "the overshoot total cannot go below 0");
  }
}

/** When the partition's next look is due by time alone (monotonic ms); Infinity when never. */
function nextLookMs(
  p: TieredPartition,
  envelope: LocalEnvelope,
  nowMs: number,
  wallMs: number,
  started: boolean,
): number {
  if (started) return nowMs + evictionRecheckMs;
  const ageOutUs = nextLocalAgeOutUs(p.partition.log.segments, envelope, wallMs * 1000);
  if (ageOutUs === null) return Infinity;
  // The envelope is on the wall clock, the looks on the monotonic one: the wait carries over.
  return nowMs + Math.max(0, Math.ceil(ageOutUs / 1000 - wallMs));
}
