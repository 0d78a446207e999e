import type { SegmentRef } from "./upload_state.ts";
import type { TieredPartition } from "./tiered_partition.ts";

/** The scan's shortest interval, while it finds new work. */
export const scanBackoffMinMs = 100;

/**
 * The scan that feeds the upload core the sealed local segments at or above each partition's floor.
 * It runs at once when a partition sealed a segment or had tiering turned on since the last look;
 * otherwise it backs off from 100 ms to `backoffMaxMs` while it finds nothing new, so idle
 * partitions cost nothing.
 */
export class SealedScan {
  readonly #backoffMaxMs: () => number;
  /**
   * What the scan last saw of each partition: its sealed count and whether it was tiered. A change
   * of either (a roll, tiering turned on) makes the next tick look at once, not after the backoff.
   */
  readonly #seen = new Map<string, number>();
  #delayMs = scanBackoffMinMs;
  #nextScanMs = 0;

  /** `backoffMaxMs` (`upload_loop_backoff_max`) is read at each scan. */
  constructor(backoffMaxMs: () => number) {
    this.#backoffMaxMs = backoffMaxMs;
  }

  /** The next tick scans, whatever the backoff (a partition joined). */
  soon(): void {
    this.#nextScanMs = 0;
  }

  forget(key: string): void {
    this.#seen.delete(key);
  }

  /**
   * Scans when due: each tiered partition's sealed segments go to `offer`, which feeds them to the
   * core and says whether the core took anything new.
   */
  onTick(
    partitions: ReadonlyMap<string, TieredPartition>,
    nowMs: number,
    offer: (p: TieredPartition, segments: SegmentRef[]) => boolean,
  ): void {
    let sealedSinceLook = false;
    for (const [key, p] of partitions) {
      if (this.#seen.get(key) !== seenOf(p)) sealedSinceLook = true;
    }
    if (!sealedSinceLook && nowMs < this.#nextScanMs) return;
    let found = false;
    for (const [key, p] of partitions) {
      this.#seen.set(key, seenOf(p));
      if (!p.tiered()) continue;
      const segments = sealedAboveFloor(p);
      if (segments.length === 0) continue;
      if (offer(p, segments)) found = true;
    }
    // Idle partitions cost nothing: the scan backs off while it finds nothing new.
    this.#delayMs = found ? scanBackoffMinMs : Math.min(this.#delayMs * 2, this.#backoffMaxMs());
    this.#nextScanMs = nowMs + this.#delayMs;
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

/** The sealed count and the tiered flag in one number: compared on every tick, so no allocation. */
function seenOf(p: TieredPartition): number {
  return p.partition.log.sealedCount * 2 + (p.tiered() ? 1 : 0);
}
