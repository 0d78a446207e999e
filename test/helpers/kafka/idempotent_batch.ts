import { encodeRecordBatch, stampProducer } from "../../../src/log/batch/record_batch.ts";

/**
 * A Kafka record batch of `count` one-byte records as an idempotent producer sends it: producer
 * `producerId` at `epoch`, its records numbered from `sequence`.
 */
export function idempotentBatch(
  producerId: number,
  epoch: number,
  sequence: number,
  count: number,
): Uint8Array {
  const records = Array.from({ length: count }, (_, i) => ({
    offsetDelta: i,
    timestampDelta: 0,
    key: null,
    value: new Uint8Array([sequence + i]),
    headers: [],
  }));
  const batch = encodeRecordBatch(records, {
    baseOffset: 0,
    baseTimestampMs: 1_700_000_000_000,
    maxTimestampMs: 1_700_000_000_000,
    timestampType: "create_time",
  });
  stampProducer(batch, producerId, epoch, sequence);
  return batch;
}
