import t from "tap";
import { hexBytes } from "../../helpers/hex_bytes.ts";
import {
  batchField,
  computeBatchCrc,
  decodeRecord,
  encodeRecordBatch,
  readRecordBatchHeader,
  RecordBatchError,
  setBaseOffset,
  validateRecordBatch,
} from "../../../src/log/batch/record_batch.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { writeZigzag } from "../../../src/runtime/zigzag_varint.ts";

await initCrc32c();

// A gzip batch as a Kafka client sent it (kafkajs's fixture "v0_recordbatch"): one record, log-append time.
const gzipBatch = hexBytes(`
  0000000000000000000000710000000002e4c324a500090000000000000173edf5ffa700000173edf5ffc9ffffffffff
  ffffff000000000000000000011f8b08000000000000130b636060e0ca4eadd43570284bcc294dd535d035323032d035
  b0d03534093134b73234b632b0d033b3308a620000b5e3f1a72c000000
`);

// A record's fields after its length (kafkajs's fixture "v0_record"): key "key-0", value "some-value-0", one header.
const recordBody = hexBytes(`
  0000000a6b65792d3018736f6d652d76616c75652d3002186865616465722d6b65792d301c6865616465722d76616c75
  652d30
`);

const text = new TextEncoder();

t.test("a Kafka client's gzip batch: its header, and a CRC32C that checks", (t) => {
  const header = validateRecordBatch(gzipBatch);
  t.match(header, {
    baseOffset: 0,
    sizeBytes: 125,
    compression: "gzip",
    timestampType: "log_append_time",
    transactional: false,
    control: false,
    lastOffsetDelta: 0,
    baseTimestampMs: 1597425188775,
    maxTimestampMs: 1597425188809,
    producerId: -1,
    recordCount: 1,
    crc: 0xe4c324a5,
  });
  const flipped = gzipBatch.slice();
  flipped[80]! ^= 1;
  t.throws(() => validateRecordBatch(flipped), /CRC32C/, "one flipped bit in the records fails the CRC");
  const moved = gzipBatch.slice();
  setBaseOffset(moved, 4242);
  t.equal(validateRecordBatch(moved).baseOffset, 4242, "the base offset is outside the CRC");
  t.end();
});

t.test("a Kafka client's record decodes to its key, value and header", (t) => {
  const framed = new Uint8Array(recordBody.length + 1);
  writeZigzag(framed, 0, recordBody.length);
  framed.set(recordBody, 1);
  const { record, next } = decodeRecord(framed, 0);
  t.equal(next, framed.length);
  t.same(record.key, text.encode("key-0"));
  t.same(record.value, text.encode("some-value-0"));
  t.same(record.headers, [{ name: "header-key-0", value: text.encode("header-value-0") }]);
  t.end();
});

t.test("a batch encoded here validates, and its records read back with nulls and repeated headers", (t) => {
  const records = [
    { offsetDelta: 0, timestampDelta: 0, key: null, value: text.encode("v0"), headers: [] },
    {
      offsetDelta: 1,
      timestampDelta: 7,
      key: text.encode("k"),
      value: null,
      headers: [{ name: "h", value: null }, { name: "h", value: text.encode("again") }],
    },
  ];
  const batch = encodeRecordBatch(records, {
    baseOffset: 0,
    baseTimestampMs: 1_700_000_000_000,
    maxTimestampMs: 1_700_000_000_007,
    timestampType: "create_time",
  });
  const header = validateRecordBatch(batch);
  t.match(header, { recordCount: 2, lastOffsetDelta: 1, compression: "none", producerId: -1 });
  const first = decodeRecord(batch, 61);
  const second = decodeRecord(batch, first.next);
  t.same([first.record, second.record], records);
  t.equal(second.next, batch.length);
  t.end();
});

t.test("malformed batches are refused as corrupt or unsupported, never read past their end", (t) => {
  const good = encodeRecordBatch([{
    offsetDelta: 0,
    timestampDelta: 0,
    key: null,
    value: text.encode("x"),
    headers: [],
  }], {
    baseOffset: 0,
    baseTimestampMs: 1,
    maxTimestampMs: 1,
    timestampType: "create_time",
  });
  const refusal = (bytes: Uint8Array) => {
    try {
      validateRecordBatch(bytes);
      return "accepted";
    } catch (error) {
      t.type(error, RecordBatchError);
      return (error as RecordBatchError).refusal;
    }
  };
  t.equal(refusal(good.subarray(0, 40)), "corrupt", "shorter than a header");
  t.equal(refusal(good.subarray(0, good.length - 1)), "corrupt", "truncated");
  const magic1 = good.slice();
  magic1[batchField.magic] = 1;
  t.equal(refusal(magic1), "unsupported", "magic 1");
  const badCodec = good.slice();
  new DataView(badCodec.buffer).setInt16(batchField.attributes, 7);
  t.equal(refusal(badCodec), "corrupt", "compression code 7");
  // A count that disagrees with the records, with the CRC recomputed so only the count is wrong.
  const recount = good.slice();
  new DataView(recount.buffer).setInt32(batchField.recordCount, 2);
  new DataView(recount.buffer).setInt32(batchField.lastOffsetDelta, 1);
  new DataView(recount.buffer).setUint32(batchField.crc, computeBatchCrc(recount));
  t.equal(refusal(recount), "corrupt", "two records announced, one framed");
  t.equal(refusal(good), "accepted");
  t.throws(() => readRecordBatchHeader(new Uint8Array(10)), /shorter than a batch header/);
  t.end();
});
