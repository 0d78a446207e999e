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
} from "../../src/log/batch_codec.ts";
import { validateRecordBatch } from "../../src/log/batch_records.ts";
import { initCrc32c } from "../../src/runtime/crc32c.ts";

await initCrc32c();
const bytes = (s: string) => new TextEncoder().encode(s);

t.test("a batch round-trips keys, headers, payloads, offsets and timestamps", (t) => {
  const batch = encodeBatch(1000, 1_700_000_000_123_000, [
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
  t.same(messages.map((m) => m.key), ["user-1", null, ""]);
  t.same(messages[0]!.headers, { "content-type": "text/plain", trace: "é✓" });
  t.same([...messages[2]!.payload], [0, 255, 7]);
  t.equal(messages[1]!.timestampUs, 1_700_000_000_123_000);
  t.end();
});

t.test("messages without headers share one frozen empty object; those with headers get their own", (t) => {
  const batch = encodeBatch(0, 1000, [
    { key: null, headers: {}, payload: new Uint8Array(1) },
    { key: null, headers: {}, payload: new Uint8Array(1) },
    { key: null, headers: { a: "1" }, payload: new Uint8Array(1) },
  ]);
  const [first, second, third] = decodeMessages(batch);
  t.equal(first!.headers, second!.headers, "one object, not one per message");
  t.ok(Object.isFrozen(first!.headers), "frozen: adding to it throws instead of changing other messages");
  t.throws(() => {
    first!.headers["x"] = "y";
  });
  t.same(second!.headers, {});
  t.notOk(Object.isFrozen(third!.headers));
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
  const alone = encodeBatch(42, 1_700_000_000_000_000, messages);
  const prepared = prepareBatch(messages);
  t.equal(prepared.lengthBytes, alone.length);
  const used = new Uint8Array(7 + prepared.lengthBytes + 5).fill(0xff);
  writeBatchInto(used.subarray(7, 7 + prepared.lengthBytes), 42, 1_700_000_000_000_000, prepared);
  t.same(used.subarray(7, 7 + prepared.lengthBytes), alone);
  t.ok(
    used.subarray(0, 7).every((b) => b === 0xff) &&
      used.subarray(7 + prepared.lengthBytes).every((b) => b === 0xff),
    "nothing outside the target is touched",
  );
  t.throws(
    () => writeBatchInto(new Uint8Array(prepared.lengthBytes + 1), 42, 0, prepared),
    /exactly its length/,
  );
  t.throws(() => encodeBatch(0, 1_700_000_000_000_001, messages), /whole milliseconds/);
  t.end();
});

t.test("the log's batches are Kafka RecordBatch v2, which Kafka's own checks accept", (t) => {
  const batch = encodeBatch(7, 1_700_000_000_000_000, [
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
