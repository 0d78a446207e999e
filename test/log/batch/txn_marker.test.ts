import t from "tap";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import {
  decodeRecord,
  RecordBatchError,
  recordBatchHeaderBytes,
  validateRecordBatch,
} from "../../../src/log/batch/record_batch.ts";
import { encodeTxnMarker, readTxnMarker } from "../../../src/log/batch/txn_marker.ts";
import { idempotentBatch } from "../../helpers/kafka/idempotent_batch.ts";

// A transaction marker as Kafka writes one: a transactional control batch of one record, its key the
// control type and its value the coordinator's epoch, read back whole.
await initCrc32c();
const marker = {
  producerId: 4001,
  epoch: 3,
  commit: true,
  coordinatorEpoch: 12,
  timestampMs: 1_700_000_000_000,
};

t.test("a marker is a valid control batch whose record holds its type and the coordinator's epoch", (t) => {
  for (const commit of [true, false]) {
    const batch = encodeTxnMarker({ ...marker, commit });
    const header = validateRecordBatch(batch);
    t.match(header, {
      transactional: true,
      control: true,
      compression: "none",
      producerId: 4001,
      producerEpoch: 3,
      baseSequence: -1,
      recordCount: 1,
      lastOffsetDelta: 0,
      maxTimestampMs: marker.timestampMs,
    });
    const { record } = decodeRecord(batch.subarray(recordBatchHeaderBytes), 0);
    t.same([...record.key!], [0, 0, 0, commit ? 1 : 0], "key: version 0, type");
    t.same([...record.value!], [0, 0, 0, 0, 0, 12], "value: version 0, coordinator epoch");
    t.same(readTxnMarker(batch), { ...marker, commit });
  }
  t.end();
});

t.test("a batch that is not a marker is refused; a control record of another type is none", (t) => {
  t.throws(() => readTxnMarker(idempotentBatch(9, 0, 0, 1)), RecordBatchError);
  const other = encodeTxnMarker(marker);
  // Type 3 (a KRaft control type) in the record's key, which is a view of the batch's bytes.
  const key = decodeRecord(other.subarray(recordBatchHeaderBytes), 0).record.key!;
  t.equal(key.buffer, other.buffer, "the key is the batch's bytes");
  key[3] = 3;
  t.equal(readTxnMarker(other), null);
  t.end();
});
