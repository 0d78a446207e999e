import type { Partition } from "../log/partition.ts";
import type { Logger } from "../runtime/logger.ts";
import type { Pump } from "../runtime/pump.ts";
import type { PieceGate } from "../runtime/piece_gate.ts";
import { BufferPool } from "../runtime/buffer_pool.ts";

/** How often each shard evaluates total retention for its partitions. */
export const retentionCheckIntervalMs = 1000;

/**
 * A partition log's write buffer: the batches of a write group are encoded into one and written
 * together. 1 MiB makes a group of small batches one write while eight per shard stay cheap to keep;
 * a larger batch gets a buffer of its own.
 */
export const writeBufferBytes = 1024 * 1024;
/**
 * Write buffers a shard lends at once (and keeps between writes): a partition that finds all of them out
 * encodes its batch into a buffer of the batch's size, so many partitions writing at once cost no more.
 */
export const writeBuffersMax = 8;

/** Decides retention for one partition; supplied by the broker, which knows the topic's options. */
export type RetentionPolicy = (partition: Partition, wallMs: number) => Promise<number> | null;

/**
 * A logical unit owning some partitions and their periodic duties, all driven from its pump's
 * tick: time-based rolls, interval fsyncs, and retention. One retention pass per partition is in
 * flight at most.
 */
export class Shard {
  readonly id: number;
  readonly pump: Pump;
  readonly partitions = new Set<Partition>();
  /**
   * One piece of work per turn of the loop, whoever does it: upload pieces, chunk fills, the walk
   * of a remote chunk, the encoding of a poll's answer and every disk caller's resumption take
   * their turn here. The gate is the process's, shared by its shards, since they share one loop.
   */
  readonly pieceGate: PieceGate;
  /**
   * The write buffers its partitions' logs borrow for one write each, so that a produce allocates
   * no buffer for its batch (a busy producer's dead batches would otherwise wait for the garbage
   * collector by the tens of megabytes).
   */
  readonly writeBuffers = new BufferPool({ bufferBytes: writeBufferBytes, buffersMax: writeBuffersMax });
  /** Produce and poll requests served for this shard's partitions: housekeeping's idle signal. */
  requests = 0;
  readonly #retentionInFlight = new Set<Partition>();
  readonly #logger: Logger;
  #lastRetentionMs = -Infinity;

  constructor(
    id: number,
    pump: Pump,
    logger: Logger,
    retention: RetentionPolicy,
    wallMs: () => number,
    pieceGate: PieceGate,
  ) {
    this.id = id;
    this.pieceGate = pieceGate;
    this.pump = pump;
    this.#logger = logger;
    pump.onTick("log", (nowMs) => {
      for (const partition of this.partitions) partition.log.onTick(nowMs);
      if (nowMs - this.#lastRetentionMs < retentionCheckIntervalMs) return;
      this.#lastRetentionMs = nowMs;
      for (const partition of this.partitions) this.#runRetention(partition, retention, wallMs());
    });
  }

  #runRetention(partition: Partition, retention: RetentionPolicy, wallMs: number): void {
    if (this.#retentionInFlight.has(partition)) return;
    const pass = retention(partition, wallMs);
    if (pass === null) return;
    this.#retentionInFlight.add(partition);
    pass
      .then((deleted) => {
        if (deleted > 0) {
          this.#logger.info("retention deleted segments", {
            partition: partition.log.label,
            segments: deleted,
          });
        }
      })
      .catch((error) => this.#logger.error("retention failed", { partition: partition.log.label, error }))
      .finally(() => this.#retentionInFlight.delete(partition));
  }
}
