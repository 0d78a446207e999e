import type { Logger } from "../runtime/logger.ts";
import type { TierMetrics } from "./tier_metrics.ts";
import type { UploadEffect } from "./upload_core.ts";

/** The upload core's effects that only tell: the shell counts and logs them, and does nothing else. */
export type ReportedEffect = Extract<
  UploadEffect,
  { kind: "gave_up_deleted" | "duplicate_discarded" | "anomaly" | "floor_fenced" }
>;

/** Counts and logs one of the core's telling effects. */
export function reportUploadEffect(
  effect: ReportedEffect,
  logger: Logger,
  metrics: TierMetrics | undefined,
): void {
  switch (effect.kind) {
    case "gave_up_deleted":
      metrics?.segmentsGivenUp.inc();
      logger.warn("segment deleted by retention before upload; the floor moves past it", {
        partition: effect.partition,
        start_offset: effect.segment.startOffset,
        end_offset: effect.segment.endOffset,
      });
      return;
    case "duplicate_discarded":
      logger.debug("duplicate upload result discarded", {
        partition: effect.partition,
        identity: effect.identity,
      });
      return;
    case "anomaly":
      metrics?.anomalies.inc();
      logger.error("upload anomaly: an object exists with other bytes; the floor is stalled", {
        partition: effect.partition,
        start_offset: effect.segment.startOffset,
        detail: effect.detail,
      });
      return;
    case "floor_fenced":
      logger.error("floor command refused: the partition's epoch moved; not submitted again", {
        partition: effect.partition,
        up_to_offset: effect.upToOffset,
      });
      return;
  }
}
