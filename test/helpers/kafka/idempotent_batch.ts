import { encodeRecordBatch } from "../../../src/log/batch/record_batch.ts";
import { setTransactional, stampProducer } from "../../../src/log/batch/producer_fields.ts";

/**
 * A Kafka record batch of `count` one-byte records as an idempotent producer sends it: producer
 * `producerId` at `epoch`, its records numbered from `sequence`, stamped `timestampMs` (a producer
 * idle past `producer_id_expiration` by that stamp is forgotten, as Kafka's broker forgets it).
 */
export function idempotentBatch(
  producerId: number,
  epoch: number,
  sequence: number,
  count: number,
  timestampMs = 1_700_000_000_000,
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
    baseTimestampMs: timestampMs,
    maxTimestampMs: timestampMs,
    timestampType: "create_time",
  });
  stampProducer(batch, producerId, epoch, sequence);
  return batch;
}

/** A batch of `idempotentBatch`'s, sent inside a transaction (the transactional attribute set). */
export function transactionalBatch(
  producerId: number,
  epoch: number,
  sequence: number,
  count: number,
): Uint8Array {
  const batch = idempotentBatch(producerId, epoch, sequence, count);
  setTransactional(batch);
  return batch;
}
