import {
  decideLocalRetention,
  keepLocalWithin,
  type LocalEnvelope,
  nextLocalAgeOutUs,
  overshootBytes,
} from "../log/retention/local_retention.ts";
import type { Clock } from "../runtime/clock/clock.ts";
import type { Logger } from "../runtime/logger.ts";
import type { TieredPartition } from "./tier_service.ts";
import { assert, rethrowBug } from "../runtime/assert.ts";
import { DueLooks } from "../runtime/cooperation/due_looks.ts";

/**
 * Runs local retention for a shard's partitions: what to do comes from the pure decision
 * (`decideLocalRetention`), and an eviction pass runs in the partition's log, one pass per
 * partition at a time. The `.log` checksums the uploads computed are kept for the passes, so that
 * eviction need not read the files again.
 */
export class LocalEvictions {
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #evicting = new Set<string>();
  /** The .log CRC32 of segments uploaded and not yet evicted, by partition and start offset. */
  readonly #uploadedCrc32 = new Map<string, Map<number, number>>();

  constructor(clock: Clock, logger: Logger) {
    this.#clock = clock;
    this.#logger = logger;
  }

  /** An upload of the partition's current generation computed this `.log` checksum. */
  noteUploaded(key: string, startOffset: number, logCrc32: number): void {
    const known = this.#uploadedCrc32.get(key) ?? new Map<number, number>();
    known.set(startOffset, logCrc32);
    this.#uploadedCrc32.set(key, known);
  }

  /** The partition left, or was purged: its checksums name segments that are gone. */
  forget(key: string): void {
    this.#uploadedCrc32.delete(key);
  }

  /**
   * One look at a partition, unless a pass of it is running: starts an eviction pass below the
   * floor and beyond the local envelope, or reports the pressure flag to `onPressure`. Returns the
   * pass it started, which never rejects (a failure is logged), so that a caller can await its end;
   * null when it started none.
   */
  look(p: TieredPartition, onPressure: (underPressure: boolean) => void): Promise<unknown> | null {
    if (this.#evicting.has(p.key)) return null;
    const sb = p.partition.superblock;
    const keepLocal = keepLocalWithin(p.envelope(), this.#clock.wallMs() * 1000);
    const decision = decideLocalRetention(p.partition.log.segments, sb.tieredUpToOffset, keepLocal);
    if (decision.kind === "hold") {
      onPressure(decision.underPressure);
      return null;
    }
    this.#evicting.add(p.key);
    return p.partition.log.evictLocal(
      sb.tieredUpToOffset,
      {
        createdRevision: sb.createdRevision,
        purgeGeneration: sb.purgeGeneration,
      },
      keepLocal,
      (start) => this.#uploadedCrc32.get(p.key)?.get(start),
    )
      .catch((error) => {
        rethrowBug(error, this.#logger, "an eviction threw; the process stops", { partition: p.key });
        this.#logger.error("eviction failed", { partition: p.key, error });
      })
      .finally(() => {
        this.#evicting.delete(p.key);
        // Checksums are kept only while their segment still has a local .log: the map stays bounded.
        const known = this.#uploadedCrc32.get(p.key);
        const local = new Set(
          p.partition.log.segments.filter((s) => s.location !== "remote").map((s) => s.startOffset),
        );
        for (const start of known?.keys() ?? []) if (!local.has(start)) known!.delete(start);
      });
  }
}

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
