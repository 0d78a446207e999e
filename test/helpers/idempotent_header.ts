import type { RecordBatchHeader } from "../../src/log/batch/record_batch.ts";

/** The header of a batch of `count` records of producer 7 at `epoch`, from sequence `first`. */
export function idempotentHeader(
  epoch: number,
  first: number,
  count: number,
  timestampMs = 1000,
): RecordBatchHeader {
  return {
    baseOffset: 0,
    sizeBytes: 100,
    partitionLeaderEpoch: -1,
    crc: 0,
    attributes: 0,
    compression: "none",
    timestampType: "create_time",
    transactional: false,
    control: false,
    lastOffsetDelta: count - 1,
    baseTimestampMs: timestampMs,
    maxTimestampMs: timestampMs,
    producerId: 7,
    producerEpoch: epoch,
    baseSequence: first,
    recordCount: count,
  };
}
