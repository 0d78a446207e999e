/**
 * Each source of chance of a cluster run is its own `Rng` stream derived from the run's seed; a
 * node's streams are derived again from its id and the count of its processes (or disks), so that
 * one node's draws never shift another's.
 */
export const clusterStreams = {
  /** The workload's steps and values. */
  workload: 11,
  /** The scenario's schedule of events. */
  schedule: 12,
  /** The network's delays, losses and duplicates. */
  network: 13,
  /** The bucket's latencies and faults. */
  bucket: 14,
  /** The faults a scenario's `draw` picks. */
  faults: 15,
  /** What a crash keeps of a node's disk; per node and disk. */
  disk: 21,
  /** The order in which a process's disk I/O completes; per node and process. */
  completion: 22,
  /** A process's own randomness (revisions, retries' jitter); per node and process. */
  process: 23,
} as const;

/** The seed of stream `stream` of the run seeded `seed`. */
export function clusterStreamSeed(seed: number, stream: number): number {
  return seed * 1000 + stream;
}

/** The seed of a node's stream: its id and its process (or disk) number `k` derive it. */
export function nodeStreamSeed(seed: number, stream: number, nodeId: number, k: number): number {
  return clusterStreamSeed(seed, stream) * 1000 + nodeId * 100 + (k % 100);
}
