import type { Partition } from "../../log/partition/partition.ts";
import type { Segment } from "../../log/segment/segment.ts";
import type { DeadlineObjectStore } from "../../objectstore/retrying_object_store.ts";
import type { ObjectHead } from "../../objectstore/object_store.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { RequestBudget } from "./housekeeping_budget.ts";
import type { JobOutcome } from "./housekeeping_core.ts";
import type { HousekeepingMetrics } from "./housekeeping_metrics.ts";
import {
  objectIncarnation,
  type PartitionIncarnation,
  type SegmentKeys,
  segmentKeys,
} from "../bucket/object_keys.ts";
import { sealedSegmentOf, type UploadDeps, uploadSegment } from "../upload/segment_uploader.ts";

/** What the verify pass needs, re-uploads included. */
export interface VerifyDeps {
  store: DeadlineObjectStore;
  clock: Clock;
  logger: Logger;
  config: { segmentUploadTimeoutMs: number };
  /** How a missing object is uploaded again from a local .log. */
  upload: UploadDeps;
  metrics?: HousekeepingMetrics;
}

/** What the HEADs of a segment's two objects found wrong, if anything. */
type VerifyProblem = "missing" | "mismatch" | "missing_index";

/**
 * HEADs the `.log` and `.index` of each segment below the floor from `fromOffset` on and compares
 * size and CRC32 with what the segment (its marker, when evicted) records. A missing object with
 * its `.log` still local is uploaded again; otherwise it is reported, never hidden.
 */
export async function verifyBelowFloor(
  deps: VerifyDeps,
  partitionKey: string,
  partition: Partition,
  inc: PartitionIncarnation,
  fromOffset: number,
  budget: RequestBudget,
): Promise<JobOutcome> {
  const sb = partition.superblock;
  const segments = partition.log.segments.filter((s) =>
    s.sealed && s.startOffset >= fromOffset && s.endOffset < sb.tieredUpToOffset &&
    s.startOffset >= sb.deletedUpToOffset
  );
  for (const segment of segments) {
    if (budget.left < 2) return { kind: "verify", partition: partitionKey, nextFrom: segment.startOffset };
    budget.take(2);
    const keys = segmentKeys(
      objectIncarnation(inc, sb.restoredFrom, segment.startOffset),
      segment.startOffset,
      segment.mergedEndOffset,
    );
    const [log, index] = [await deps.store.head(keys.log), await deps.store.head(keys.index)];
    const problem = problemOf(segment, log, index);
    if (problem === null) continue;
    if (problem !== "mismatch" && segment.location !== "remote") {
      budget.take(2);
      await reupload(deps, partitionKey, segment, keys);
      continue;
    }
    deps.metrics?.verifyAnomalies.inc({ kind: problem });
    deps.logger.error("verify: an object below the floor is missing or differs from its marker", {
      partition: partitionKey,
      start_offset: segment.startOffset,
      key: problem === "missing_index" ? keys.index : keys.log,
      problem,
      size_expected: segment.sizeBytes,
      size_found: log?.sizeBytes ?? null,
    });
  }
  return { kind: "verify", partition: partitionKey, nextFrom: null };
}

/** The `.log` missing, or of another size or CRC32 than the segment records; else the `.index` missing. */
function problemOf(segment: Segment, log: ObjectHead | null, index: ObjectHead | null): VerifyProblem | null {
  if (log === null) return "missing";
  if (
    log.sizeBytes !== segment.sizeBytes ||
    (segment.marker !== null && log.metadata["crc32"] !== String(segment.marker.logCrc32))
  ) {
    return "mismatch";
  }
  return index === null ? "missing_index" : null;
}

async function reupload(
  deps: VerifyDeps,
  partitionKey: string,
  segment: Segment,
  keys: SegmentKeys,
): Promise<void> {
  const outcome = await uploadSegment(
    deps.upload,
    sealedSegmentOf(segment),
    keys,
    deps.clock.nowMs() + deps.config.segmentUploadTimeoutMs,
  );
  if (outcome.kind === "anomaly") {
    deps.metrics?.verifyAnomalies.inc({ kind: "mismatch" });
    deps.logger.error("verify: re-upload found other bytes", {
      partition: partitionKey,
      detail: outcome.detail,
    });
    return;
  }
  deps.metrics?.verifyReuploads.inc();
  deps.logger.warn("verify: a missing object was uploaded again from the local .log", {
    partition: partitionKey,
    start_offset: segment.startOffset,
  });
}
