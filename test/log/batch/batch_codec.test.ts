import t from "tap";
import {
  batchHeaderBytes,
  decodeBatchHeader,
  decodeMessages,
  encodeBatch,
  isPlausibleHeader,
  type MessageInput,
  prepareBatch,
  verifyBatch,
  writeBatchInto,
} from "../../../src/log/batch/batch_codec.ts";
import {
  batchField,
  computeBatchCrc,
  RecordBatchError,
  validateRecordBatch,
} from "../../../src/log/batch/record_batch.ts";
import { gzipSync } from "node:zlib";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";

await initCrc32c();
const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

t.test("a batch round-trips keys, headers, payloads, offsets and timestamps", (t) => {
  const batch = encodeBatch(1000, 1_700_000_000_123, [
    { key: "user-1", headers: { "content-type": "text/plain", trace: "é✓" }, payload: bytes("hello") },
    { key: null, headers: {}, payload: new Uint8Array(0) },
    { key: "", headers: {}, payload: new Uint8Array([0, 255, 7]) },
  ]);
  t.ok(verifyBatch(batch));
  const header = decodeBatchHeader(batch)!;
  t.equal(header.baseOffset, 1000);
  t.equal(header.messageCount, 3);
  t.equal(header.lengthBytes, batch.length);
  const messages = decodeMessages(batch);
  t.same(messages.map((m) => m.offset), [1000, 1001, 1002]);
  t.same(messages.map((m) => (m.key === null ? null : text(m.key))), ["user-1", null, ""]);
  t.same(messages[0]!.headers.map((h) => [h.name, text(h.value!)]), [["content-type", "text/plain"], [
    "trace",
    "é✓",
  ]]);
  t.same([...messages[2]!.payload!], [0, 255, 7]);
  t.equal(messages[1]!.timestampMs, 1_700_000_000_123);
  t.end();
});

t.test("Kafka's model: binary keys, null values, repeated headers with null values, timestamps per message", (t) => {
  const key = new Uint8Array([0xff, 0x00, 0xfe]);
  const batch = encodeBatch(0, 5_000, [
    {
      key,
      headers: [{ name: "h", value: null }, { name: "h", value: bytes("2") }],
      payload: null,
      timestampMs: 4_000,
    },
    { key: null, headers: [], payload: bytes("v"), timestampMs: 4_500 },
    { key: null, headers: [], payload: bytes("w") },
  ]);
  const header = validateRecordBatch(batch);
  t.equal(header.baseTimestampMs, 4_000, "the first message's time is the base");
  t.equal(header.maxTimestampMs, 5_000, "the server's stamp for the one without a time");
  const [first, second, third] = decodeMessages(batch);
  t.same([...first!.key!], [0xff, 0x00, 0xfe]);
  t.equal(first!.payload, null, "a null value stays null");
  t.same(first!.headers.map((h) => [h.name, h.value === null ? null : text(h.value)]), [["h", null], [
    "h",
    "2",
  ]]);
  t.same([first!.timestampMs, second!.timestampMs, third!.timestampMs], [4_000, 4_500, 5_000]);
  t.end();
});

t.test("messages without headers share one frozen empty list", (t) => {
  const batch = encodeBatch(0, 1000, [
    { key: null, headers: {}, payload: new Uint8Array(1) },
    { key: null, headers: {}, payload: new Uint8Array(1) },
    { key: null, headers: { a: "1" }, payload: new Uint8Array(1) },
  ]);
  const [first, second, third] = decodeMessages(batch);
  t.equal(first!.headers, second!.headers, "one list, not one per message");
  t.ok(Object.isFrozen(first!.headers), "frozen: adding to it throws instead of changing other messages");
  t.throws(() => (first!.headers as { name: string; value: null }[]).push({ name: "x", value: null }));
  t.same(second!.headers, []);
  t.equal(third!.headers.length, 1);
  t.end();
});

t.test("a gzip batch decodes to its records; a broken one is corrupt, not an exception of another kind", (t) => {
  const plain = encodeBatch(3, 1000, [{ key: "k", headers: {}, payload: bytes("zipped") }]);
  const records = plain.subarray(batchHeaderBytes);
  const zipped = gzipSync(records);
  const batch = new Uint8Array(batchHeaderBytes + zipped.length);
  batch.set(plain.subarray(0, batchHeaderBytes));
  batch.set(zipped, batchHeaderBytes);
  const view = new DataView(batch.buffer);
  view.setInt32(batchField.batchLength, batch.length - 12);
  view.setInt16(batchField.attributes, 1);
  view.setUint32(batchField.crc, computeBatchCrc(batch));
  t.same(decodeMessages(batch).map((m) => [m.offset, text(m.payload!)]), [[3, "zipped"]]);
  batch[batch.length - 3]! ^= 0xff;
  t.throws(() => decodeMessages(batch), RecordBatchError);
  t.end();
});

t.test("a flipped bit in the checksum or anything after it fails verification", (t) => {
  const batch = encodeBatch(0, 1000, [{ key: "k", headers: { a: "b" }, payload: bytes("payload bytes") }]);
  const failures: number[] = [];
  // The CRC32C covers the attributes (byte 21) to the end; the base offset, length, leader epoch and
  // magic before the CRC field are checked by the header's plausibility and the scan.
  for (let i = 17; i < batch.length; i++) {
    const copy = batch.slice();
    copy[i]! ^= 0x10;
    if (verifyBatch(copy)) failures.push(i);
  }
  t.same(failures, [], "every flipped byte is detected");
  t.notOk(verifyBatch(batch.subarray(0, batch.length - 1)), "a short batch fails");
  t.end();
});

t.test("a batch written into a used buffer, at an offset, is byte for byte the batch of its own", (t) => {
  // The log encodes into reused write buffers: stale bytes and a non-zero offset must not leak in.
  const messages: MessageInput[] = [
    { key: "a", headers: { h: "v" }, payload: new Uint8Array([1, 2, 3]) },
    { key: null, headers: {}, payload: new Uint8Array(50).fill(9) },
  ];
  const alone = encodeBatch(42, 1_700_000_000_000, messages);
  const prepared = prepareBatch(messages, 1_700_000_000_000);
  t.equal(prepared.lengthBytes, alone.length);
  const used = new Uint8Array(7 + prepared.lengthBytes + 5).fill(0xff);
  writeBatchInto(used.subarray(7, 7 + prepared.lengthBytes), 42, prepared);
  t.same(used.subarray(7, 7 + prepared.lengthBytes), alone);
  t.ok(
    used.subarray(0, 7).every((b) => b === 0xff) &&
      used.subarray(7 + prepared.lengthBytes).every((b) => b === 0xff),
    "nothing outside the target is touched",
  );
  t.throws(
    () => writeBatchInto(new Uint8Array(prepared.lengthBytes + 1), 42, prepared),
    /exactly its length/,
  );
  t.end();
});

t.test("the log's batches are Kafka RecordBatch v2, which Kafka's own checks accept", (t) => {
  const batch = encodeBatch(7, 1_700_000_000_000, [
    { key: "k", headers: { h: "v" }, payload: bytes("value") },
    { key: null, headers: {}, payload: bytes("") },
  ]);
  const header = validateRecordBatch(batch);
  t.equal(header.baseOffset, 7);
  t.equal(header.recordCount, 2);
  t.equal(header.baseTimestampMs, 1_700_000_000_000);
  t.equal(header.compression, "none");
  t.equal(header.producerId, -1);
  const plain = decodeBatchHeader(batch)!;
  t.ok(isPlausibleHeader(plain));
  t.equal(plain.formatVersion, 2, "magic 2");
  const old = batch.slice();
  old[16] = 1;
  t.notOk(isPlausibleHeader(decodeBatchHeader(old)!), "another magic is not a batch of this log");
  const garbage = new Uint8Array(batchHeaderBytes).fill(0xff);
  t.notOk(isPlausibleHeader(decodeBatchHeader(garbage)!), "garbage decodes without throwing, and is refused");
  t.end();
});
