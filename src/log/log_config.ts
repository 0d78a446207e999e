export type FsyncPolicy = "always" | "interval";

/** How one partition's log writes: the topic's options plus the server's durability settings. */
export interface LogConfig {
  segmentSizeBytes: number;
  /** Roll the active segment once its first batch is this old; null never rolls by age. */
  segmentMaxAgeMs: number | null;
  indexIntervalBytes: number;
  fsync: FsyncPolicy;
  fsyncIntervalMs: number;
  /** Bound on queued writes per partition. */
  writeQueueMax: number;
  /**
   * The topic's `timestamp_type`: "create_time" keeps the producer's timestamps, "log_append_time"
   * stamps every batch with the server's time at the append. Absent: "create_time".
   */
  timestampType?: TimestampType;
  /**
   * `[system] producer_id_expiration`: an idempotent producer whose last batch's timestamp is this
   * much older than the wall clock is forgotten. Absent: producers are never forgotten.
   */
  producerIdExpirationMs?: number;
}

export type TimestampType = "create_time" | "log_append_time";

/** Writes taken from the queue and made durable by one fsync (group commit). */
export const groupOpsMax = 256;
