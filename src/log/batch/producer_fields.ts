import { batchField, computeBatchCrc, recordBatchHeaderBytes } from "./record_batch.ts";

// The producer fields a client sets on a batch it encoded (the simulator's producers and tests play
// clients): each rewrite recomputes the CRC, which covers them.

/**
 * Makes the batch an idempotent producer's: its producer id, epoch and first sequence number, the
 * CRC, which covers them, recomputed (what a Kafka client does; the simulator's producer and tests).
 */
export function stampProducer(
  batch: Uint8Array,
  producerId: number,
  epoch: number,
  baseSequence: number,
): void {
  const view = new DataView(batch.buffer, batch.byteOffset, recordBatchHeaderBytes);
  view.setBigInt64(batchField.producerId, BigInt(producerId));
  view.setInt16(batchField.producerEpoch, epoch);
  view.setInt32(batchField.baseSequence, baseSequence);
  view.setUint32(batchField.crc, computeBatchCrc(batch));
}

/** Sets the batch's transactional attribute (a batch a transactional producer sends), and its CRC again. */
export function setTransactional(batch: Uint8Array): void {
  const view = new DataView(batch.buffer, batch.byteOffset, recordBatchHeaderBytes);
  view.setInt16(batchField.attributes, view.getInt16(batchField.attributes) | 0x10);
  view.setUint32(batchField.crc, computeBatchCrc(batch));
}
