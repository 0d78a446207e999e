import { ReplicaAppendError } from "./log_errors.ts";
import { checkProducedBatches, type ProduceChecks, type ProducedBatch } from "./produced_batches.ts";
import type { ReadResult } from "./segment_reads.ts";

/**
 * A leader's batches as a follower appends them: checked as a produce's are, and each starting
 * where the one before ended, the first at `nextOffset` (the follower's log end); otherwise
 * `ReplicaAppendError` and nothing is appended.
 */
export async function checkReplicatedBatches(
  records: Uint8Array,
  checks: ProduceChecks,
  nextOffset: number,
  label: string,
): Promise<ProducedBatch[]> {
  const batches = await checkProducedBatches(records, checks);
  let expected = nextOffset;
  for (const { header } of batches) {
    if (header.baseOffset !== expected) {
      throw new ReplicaAppendError(
        `Cannot append the leader's batches to ${label}: a batch starts at ${header.baseOffset}, not ${expected}`,
      );
    }
    expected = header.baseOffset + header.lastOffsetDelta + 1;
  }
  return batches;
}

/** A read's messages below `endOffset` (the high watermark): what lies above is not served yet. */
export function belowWatermark(result: ReadResult, endOffset: number): ReadResult {
  const above = result.messages.findIndex((m) => m.offset >= endOffset);
  if (above < 0) return result;
  return { ...result, messages: result.messages.slice(0, above), nextOffset: result.messages[above]!.offset };
}
