import { decideLocalRetention, keepLocalWithin } from "../log/local_retention.ts";
import type { Clock } from "../runtime/clock.ts";
import type { Logger } from "../runtime/logger.ts";
import type { TieredPartition } from "./tiered_partition.ts";

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
      .catch((error) => this.#logger.error("eviction failed", { partition: p.key, error }))
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
