import type { Partition } from "../../log/partition/partition.ts";
import {
  frontSegmentsToDelete,
  nextRetentionAgeOutMs,
  retentionByLimits,
  retentionLimitsOf,
} from "../../log/retention/total_retention.ts";
import type { TopicOptions } from "../catalog/topic_options.ts";

/**
 * Total retention of one partition, by the topic's age and size limits and, on tiered topics, the
 * consumer barrier (docs/DESIGN.md, "Total retention and the consumer barrier") at `consumerMinimum`,
 * the smallest offset a consumer still reads from (its stored offsets' and its groups'; null: none).
 * Null when the topic's options retain everything; otherwise the pass, resolving with the number of
 * segments it deleted.
 */
export function totalRetentionPass(
  partition: Partition,
  options: TopicOptions,
  wallMs: number,
  consumerMinimum: number | null = partition.offsets.minimum(),
): Promise<number> | null {
  const limits = retentionLimitsOf(options, consumerMinimum);
  if (limits === null) return null;
  return partition.enforceRetention(retentionByLimits(limits, wallMs));
}

/**
 * When (wall clock ms) the partition's next total-retention look is due by time alone: at once
 * plus `recheckMs` while its front segment is past the limits (a pass is deleting it, or the
 * consumer barrier holds it until a consumer moves on), when its front segment ages out, or never
 * (null) while nothing but a write or a change of options could change the answer.
 */
export function nextRetentionLookWallMs(
  partition: Partition,
  options: TopicOptions,
  wallMs: number,
  recheckMs: number,
): number | null {
  const limits = retentionLimitsOf(options, null);
  if (limits === null) return null;
  const segments = partition.log.segments;
  if (frontSegmentsToDelete(segments, retentionByLimits(limits, wallMs)) > 0) return wallMs + recheckMs;
  return nextRetentionAgeOutMs(segments, limits.maxAgeMs, wallMs);
}
