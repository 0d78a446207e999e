import {
  batchField,
  computeBatchCrc,
  decodeRecord,
  encodeRecordBatch,
  readRecordBatchHeader,
  RecordBatchError,
  recordBatchHeaderBytes,
} from "./record_batch.ts";

/**
 * A transaction marker (Kafka's `EndTransactionMarker`): the control batch a transaction's end writes
 * to each of its partitions. A RecordBatch v2 of producer `producerId` at `epoch`, sequence -1,
 * transactional and control (attributes 0x30), uncompressed, with one record: its key the control
 * type (int16 version 0, int16 type: 0 abort, 1 commit), its value the coordinator's epoch (int16
 * version 0, int32 epoch).
 */
export interface TxnMarker {
  producerId: number;
  epoch: number;
  commit: boolean;
  coordinatorEpoch: number;
  timestampMs: number;
}

/** The attributes of a marker's batch: transactional (0x10) and control (0x20). */
const markerAttributes = 0x30;
const controlKeyVersion = 0;
const markerValueVersion = 0;

/** A marker's batch, at base offset 0 (the log places it), with its CRC. */
export function encodeTxnMarker(marker: TxnMarker): Uint8Array {
  const key = new Uint8Array(4);
  const keyView = new DataView(key.buffer);
  keyView.setInt16(0, controlKeyVersion);
  keyView.setInt16(2, marker.commit ? 1 : 0);
  const value = new Uint8Array(6);
  const valueView = new DataView(value.buffer);
  valueView.setInt16(0, markerValueVersion);
  valueView.setInt32(2, marker.coordinatorEpoch);
  const batch = encodeRecordBatch([{ offsetDelta: 0, timestampDelta: 0, key, value, headers: [] }], {
    baseOffset: 0,
    baseTimestampMs: marker.timestampMs,
    maxTimestampMs: marker.timestampMs,
    timestampType: "create_time",
  });
  const view = new DataView(batch.buffer, batch.byteOffset, recordBatchHeaderBytes);
  view.setInt16(batchField.attributes, markerAttributes);
  view.setBigInt64(batchField.producerId, BigInt(marker.producerId));
  view.setInt16(batchField.producerEpoch, marker.epoch);
  view.setInt32(batchField.baseSequence, -1);
  view.setUint32(batchField.crc, computeBatchCrc(batch));
  return batch;
}

/**
 * The transaction marker a control batch holds; null for a control batch of another type (Kafka's
 * KRaft types, which a partition of a topic never holds). Throws RecordBatchError for a batch that
 * is not a control batch, or whose record is not a control record.
 */
export function readTxnMarker(batch: Uint8Array): TxnMarker | null {
  const header = readRecordBatchHeader(batch);
  if (!header.control || header.compression !== "none" || header.recordCount !== 1) {
    throw new RecordBatchError("corrupt", "a transaction marker is one uncompressed control record");
  }
  const { record } = decodeRecord(batch.subarray(recordBatchHeaderBytes), 0);
  const key = record.key;
  if (key === null || key.length < 4) {
    throw new RecordBatchError("corrupt", "a control record's key is short");
  }
  const keyView = new DataView(key.buffer, key.byteOffset, key.byteLength);
  const type = keyView.getInt16(2);
  if (type !== 0 && type !== 1) return null;
  const value = record.value;
  if (value === null || value.length < 6) {
    throw new RecordBatchError("corrupt", "a transaction marker's value is short");
  }
  const valueView = new DataView(value.buffer, value.byteOffset, value.byteLength);
  return {
    producerId: header.producerId,
    epoch: header.producerEpoch,
    commit: type === 1,
    coordinatorEpoch: valueView.getInt32(2),
    timestampMs: header.maxTimestampMs,
  };
}
