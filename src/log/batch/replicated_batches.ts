import { ReplicaAppendError } from "../log_errors.ts";
import {
  checkProducedBatches,
  type ProduceChecks,
  type ProducedBatch,
  producedBatchesMax,
} from "./produced_batches.ts";
import { batchField, batchLengthOverheadBytes, recordBatchHeaderBytes } from "./record_batch.ts";
import type { ReadResult } from "../read/segment_reads.ts";

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
  const batches = await checkProducedBatches(records, checks, "replica");
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

/**
 * A leader's answer cut into runs of at most `producedBatchesMax` batches each, by their length
 * fields alone (no CRC is read), so that each run is checked and appended as one produce is: an
 * answer of many small batches (a follower far behind) holds far more than one produce may. Where a
 * length field is out of bounds the rest is one run, for the check to refuse.
 */
export function replicatedRuns(records: Uint8Array): Uint8Array[] {
  const runs: Uint8Array[] = [];
  let runStart = 0;
  let batches = 0;
  let at = 0;
  while (at + recordBatchHeaderBytes <= records.length) {
    const view = new DataView(records.buffer, records.byteOffset + at, recordBatchHeaderBytes);
    const sizeBytes = view.getInt32(batchField.batchLength) + batchLengthOverheadBytes;
    if (sizeBytes < recordBatchHeaderBytes || at + sizeBytes > records.length) break;
    if (batches === producedBatchesMax) {
      runs.push(records.subarray(runStart, at));
      runStart = at;
      batches = 0;
    }
    batches++;
    at += sizeBytes;
  }
  runs.push(records.subarray(runStart));
  return runs;
}
