/**
 * Each source of chance of a run is its own `Rng` stream, seeded from the run's seed: stream `k` is
 * seeded `seed × 4 + k`. A source draws only from its own stream, so the draws of one never shift
 * another's; changing an offset here changes every run.
 */
export const rngStreams = {
  /** The workload's steps. */
  workload: 1,
  /** What a crash keeps of the disk's writes. */
  disk: 2,
  /** The store's latencies and faults per request. */
  store: 3,
  /** The retrying client's backoff jitter. */
  retries: 4,
  /** The scenario's fault schedule. */
  faults: 5,
  /** The tier service; a process built after n crashes takes stream `tier + n`. */
  tier: 6,
  /** The order in which disk I/O completes. */
  completion: 1_000_003,
  /** The fields a scenario's `draw` picks. */
  scenarioDraw: 2_000_003,
  /** Partition revisions; the n-th partition created takes `n × 3_000_017`. */
  partitionRevision: 3_000_017,
  /** Whether a crash strikes before a durable step of an eviction. */
  crashPoint: 4_000_037,
} as const;

/** The seed of stream `stream` of the run seeded `seed`. */
export function streamSeed(seed: number, stream: number): number {
  return seed * 4 + stream;
}
