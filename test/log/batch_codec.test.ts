import t from "tap";
import {
  decodeBatchHeader,
  decodeMessages,
  encodeBatch,
  type MessageInput,
  prepareBatch,
  verifyBatch,
  writeBatchInto,
} from "../../src/log/batch_codec.ts";
import { initCrc32c } from "../../src/runtime/crc32c.ts";

await initCrc32c();
const bytes = (s: string) => new TextEncoder().encode(s);

t.test("a batch round-trips keys, headers, payloads, offsets and timestamps", (t) => {
  const batch = encodeBatch(1000, 1_700_000_000_000_123, [
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
  t.equal(messages[1]!.timestampUs, 1_700_000_000_000_123);
  t.end();
});

t.test("messages without headers share one frozen empty object; those with headers get their own", (t) => {
  const batch = encodeBatch(0, 1, [
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

t.test("a flipped bit anywhere after the checksum field fails verification", (t) => {
  const batch = encodeBatch(0, 1, [{ key: "k", headers: { a: "b" }, payload: bytes("payload bytes") }]);
  const failures: number[] = [];
  for (let i = 16; i < batch.length; i++) {
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
  t.end();
});
