import type { Partition } from "../log/partition.ts";
import { retentionByLimits, retentionLimitsOf } from "../log/total_retention.ts";
import type { TopicOptions } from "./topic_options.ts";

/**
 * Total retention of one partition, by the topic's age and size limits and, on tiered topics, the
 * consumer barrier (docs/DESIGN.md, "Total retention and the consumer barrier"). Null when the
 * topic's options retain everything; otherwise the pass, resolving with the number of segments it
 * deleted.
 */
export function totalRetentionPass(
  partition: Partition,
  options: TopicOptions,
  wallMs: number,
): Promise<number> | null {
  const limits = retentionLimitsOf(options, partition.offsets.minimum());
  if (limits === null) return null;
  return partition.enforceRetention(retentionByLimits(limits, wallMs));
}
