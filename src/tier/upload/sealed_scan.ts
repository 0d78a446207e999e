import { DueLooks } from "../../runtime/cooperation/due_looks.ts";
import type { SegmentRef } from "./upload_state.ts";
import type { TieredPartition } from "../tier_service.ts";

/** The scan's shortest interval for a partition, while it finds new work there. */
export const scanBackoffMinMs = 100;

/** Longest time between two looks at a partition nothing happened to: a safety net under seals and floor moves. */
export const scanIdleLookIntervalMs = 300_000;

/** Bound on the partitions one tick looks at because their look is due; the rest wait a tick. */
export const scanDueLooksPerTickMax = 64;

/**
 * The scan that feeds the upload core the sealed local segments at or above each partition's floor.
 * A partition whose log was active (a seal, a change of topic options: `touch`) is looked at the
 * next tick, if its sealed count or tiering changed; one whose floor moved (`due`) at the next tick
 * whatever changed. A partition with sealed segments the core did not take (its queue per partition
 * is bounded) is looked at again 100 ms after a look that found something, backing off to
 * `backoffMaxMs` while it finds nothing; any other one at least every `scanIdleLookIntervalMs`. An
 * idle partition costs a tick nothing but that one look per interval.
 */
export class SealedScan {
  readonly #backoffMaxMs: () => number;
  /** What the scan last saw of each partition: its sealed count and whether it was tiered. */
  readonly #seen = new Map<string, number>();
  /** Partitions active since the last tick; bounded by the partitions hosted. */
  readonly #touched = new Set<string>();
  readonly #looks = new DueLooks<string>({
    idleLookIntervalMs: scanIdleLookIntervalMs,
    dueLooksPerTickMax: scanDueLooksPerTickMax,
  });
  /** Each partition with sealed segments waiting: the delay before its next look. */
  readonly #delayMs = new Map<string, number>();

  /** `backoffMaxMs` (`upload_loop_backoff_max`) is read at each look. */
  constructor(backoffMaxMs: () => number) {
    this.#backoffMaxMs = backoffMaxMs;
  }

  /** A partition joins: it is looked at from the next tick. */
  add(key: string, nowMs: number): void {
    this.#looks.add(key, nowMs);
  }

  /** The partition's log was active: the next tick looks at it if its seal count or tiering changed. */
  touch(key: string): void {
    this.#touched.add(key);
  }

  /** The partition's floor moved, so its queue has room: the next tick looks at it. */
  due(key: string, nowMs: number): void {
    this.#looks.bringForward(key, nowMs);
  }

  forget(key: string): void {
    this.#seen.delete(key);
    this.#touched.delete(key);
    this.#looks.remove(key);
    this.#delayMs.delete(key);
  }

  /**
   * Looks at the partitions touched since the last tick and those whose look is due: each tiered
   * partition's sealed segments go to `offer`, which feeds them to the core and says whether the
   * core took anything new.
   */
  onTick(
    partitions: ReadonlyMap<string, TieredPartition>,
    nowMs: number,
    offer: (p: TieredPartition, segments: SegmentRef[]) => boolean,
  ): void {
    for (const key of this.#touched) {
      const p = partitions.get(key);
      if (p !== undefined && this.#seen.get(key) !== seenOf(p)) this.#look(key, p, nowMs, offer);
    }
    this.#touched.clear();
    for (const key of this.#looks.take(nowMs)) {
      const p = partitions.get(key);
      if (p !== undefined) this.#look(key, p, nowMs, offer);
    }
  }

  /** Offers the partition's sealed segments above its floor, and says when to look again. */
  #look(
    key: string,
    p: TieredPartition,
    nowMs: number,
    offer: (p: TieredPartition, segments: SegmentRef[]) => boolean,
  ): void {
    this.#seen.set(key, seenOf(p));
    const segments = p.tiered() ? sealedAboveFloor(p) : [];
    if (segments.length === 0) {
      this.#delayMs.delete(key);
      return;
    }
    // Only what every in-sync replica holds and no open transaction may still abort is offered:
    // below the last stable offset (the high watermark, on a single node the log's end, held back
    // by open transactions, as KIP-405 uploads), so that no floor covers records a new leader might
    // lack. Sealed segments wait: soon again while the core takes them, backing off while it does
    // not (or while the last stable offset has not passed them).
    const stable = p.partition.log.lastStableOffset;
    const committed = segments.filter((s) => s.endOffset < stable);
    const delayMs = committed.length > 0 && offer(p, committed)
      ? scanBackoffMinMs
      : Math.min((this.#delayMs.get(key) ?? scanBackoffMinMs / 2) * 2, this.#backoffMaxMs());
    this.#delayMs.set(key, delayMs);
    this.#looks.bringForward(key, nowMs + delayMs);
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
