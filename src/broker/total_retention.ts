import type { Partition } from "../log/partition.ts";
import type { TopicOptions } from "./topic_options.ts";

/**
 * Total retention of one partition: by age of the newest message in a segment, and by size.
 * Null when the topic's options retain everything; otherwise the pass, resolving with the number
 * of segments it deleted.
 */
export function totalRetentionPass(
  partition: Partition,
  options: TopicOptions,
  wallMs: number,
): Promise<number> | null {
  const { retentionMaxAgeMs, retentionMaxBytes, tiered, retentionConsumerBarrier } = options;
  if (retentionMaxAgeMs === null && retentionMaxBytes === null) return null;
  // The consumer barrier (RFC invariant 8): on a tiered topic, a segment that a stored consumer
  // offset (the next offset that consumer reads) points into or before is kept.
  const barrier = tiered && retentionConsumerBarrier ? partition.offsets.minimum() : null;
  return partition.enforceRetention((segment, retainedBytes) =>
    (barrier === null || segment.endOffset < barrier) &&
    ((retentionMaxBytes !== null && retainedBytes > retentionMaxBytes) ||
      (retentionMaxAgeMs !== null && segment.maxTimestampUs / 1000 < wallMs - retentionMaxAgeMs))
  );
}
