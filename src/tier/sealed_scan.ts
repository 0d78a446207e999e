import type { SegmentRef } from "./upload_state.ts";
import type { TieredPartition } from "./tiered_partition.ts";

/** The scan's shortest interval, while it finds new work. */
export const scanBackoffMinMs = 100;

/** Bound on the partitions the periodic sweep looks at in one tick; a larger shard's sweep takes more ticks. */
export const sweepPartitionsPerTickMax = 64;

/**
 * The scan that feeds the upload core the sealed local segments at or above each partition's floor.
 * A partition whose log was active (a seal, a change of topic options: `touch`) is looked at the
 * next tick, if its sealed count or tiering changed. Besides, a sweep looks at every partition, at
 * most `sweepPartitionsPerTickMax` per tick, to find what the core could not queue before (its
 * queue per partition is bounded); it runs again 100 ms after it found something, backing off to
 * `backoffMaxMs` while it finds nothing. An idle partition costs no tick anything but its share of
 * the sweep.
 */
export class SealedScan {
  readonly #backoffMaxMs: () => number;
  /** What the scan last saw of each partition: its sealed count and whether it was tiered. */
  readonly #seen = new Map<string, number>();
  /** Partitions active since the last tick; bounded by the partitions hosted. */
  readonly #touched = new Set<string>();
  #sweep: string[] = [];
  #sweepCursor = 0;
  #sweepFound = false;
  #delayMs = scanBackoffMinMs;
  #nextSweepMs = 0;

  /** `backoffMaxMs` (`upload_loop_backoff_max`) is read at each sweep. */
  constructor(backoffMaxMs: () => number) {
    this.#backoffMaxMs = backoffMaxMs;
  }

  /** A sweep starts at the next tick, whatever the backoff (a partition joined). */
  soon(): void {
    this.#nextSweepMs = 0;
  }

  /** The partition's log was active: the next tick looks at it if its seal count or tiering changed. */
  touch(key: string): void {
    this.#touched.add(key);
  }

  forget(key: string): void {
    this.#seen.delete(key);
    this.#touched.delete(key);
  }

  /**
   * Looks at the partitions touched since the last tick and at this tick's share of the sweep: each
   * tiered partition's sealed segments go to `offer`, which feeds them to the core and says whether
   * the core took anything new.
   */
  onTick(
    partitions: ReadonlyMap<string, TieredPartition>,
    nowMs: number,
    offer: (p: TieredPartition, segments: SegmentRef[]) => boolean,
  ): void {
    let found = false;
    for (const key of this.#touched) {
      const p = partitions.get(key);
      if (p !== undefined && this.#seen.get(key) !== seenOf(p)) found = this.#look(key, p, offer) || found;
    }
    this.#touched.clear();
    if (found) this.#nextSweepMs = Math.min(this.#nextSweepMs, nowMs + scanBackoffMinMs);
    this.#sweepStep(partitions, nowMs, offer);
  }

  #sweepStep(
    partitions: ReadonlyMap<string, TieredPartition>,
    nowMs: number,
    offer: (p: TieredPartition, segments: SegmentRef[]) => boolean,
  ): void {
    if (this.#sweepCursor >= this.#sweep.length) {
      if (nowMs < this.#nextSweepMs) return;
      this.#sweep = [...partitions.keys()];
      this.#sweepCursor = 0;
      this.#sweepFound = false;
    }
    const end = Math.min(this.#sweep.length, this.#sweepCursor + sweepPartitionsPerTickMax);
    for (; this.#sweepCursor < end; this.#sweepCursor++) {
      const key = this.#sweep[this.#sweepCursor]!;
      const p = partitions.get(key);
      if (p !== undefined && this.#look(key, p, offer)) this.#sweepFound = true;
    }
    if (this.#sweepCursor < this.#sweep.length) return;
    // Idle partitions cost nothing: the sweep backs off while it finds nothing new.
    this.#delayMs = this.#sweepFound ? scanBackoffMinMs : Math.min(this.#delayMs * 2, this.#backoffMaxMs());
    this.#nextSweepMs = nowMs + this.#delayMs;
  }

  /** Offers the partition's sealed segments above its floor; true when the core took something. */
  #look(
    key: string,
    p: TieredPartition,
    offer: (p: TieredPartition, segments: SegmentRef[]) => boolean,
  ): boolean {
    this.#seen.set(key, seenOf(p));
    if (!p.tiered()) return false;
    const segments = sealedAboveFloor(p);
    return segments.length > 0 && offer(p, segments);
  }
}

/** The sealed segments of a partition that are local only and at or above its floor. */
function sealedAboveFloor(p: TieredPartition): SegmentRef[] {
  const floor = p.partition.superblock.tieredUpToOffset;
  return p.partition.log.segments
    .filter((s) => s.sealed && s.location === "local" && s.startOffset >= floor)
    .map((s) => ({
      startOffset: s.startOffset,
      endOffset: s.endOffset,
      sizeBytes: s.sizeBytes,
      sealedAtMs: s.maxTimestampUs / 1000,
    }));
}

/** The sealed count and the tiered flag in one number, so a look allocates nothing to compare them. */
function seenOf(p: TieredPartition): number {
  return p.partition.log.sealedCount * 2 + (p.tiered() ? 1 : 0);
}
