import type { Partition } from "../../log/partition/partition.ts";
import type { ReplaceRemoteSegments } from "../../log/segment/segment_replacement.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { TierMetrics } from "../tier_metrics.ts";

/**
 * A committed replace of remote segments (a merge) applied to its partition: the chain takes it, or
 * rejects it when it no longer holds the range (a warning; the replacing objects stay in the store
 * until retention's watermark passes them). Counted and logged either way.
 */
export async function applyReplace(
  partition: Partition,
  command: ReplaceRemoteSegments,
  logger: Logger,
  metrics: TierMetrics | undefined,
): Promise<void> {
  const decision = await partition.replaceRemote(command);
  const m = command.markers;
  const fields = {
    partition: command.partition,
    start_offset: m[0]!.startOffset,
    end_offset: m.at(-1)!.endOffset,
  };
  if (decision.kind === "rejected") {
    logger.warn("replace of remote segments rejected", { ...fields, reason: decision.reason });
  } else if (decision.kind === "replace") {
    metrics?.segmentsReplaced.inc(decision.count);
    logger.info("remote segments replaced", { ...fields, replaced: decision.count, by: m.length });
  }
}
