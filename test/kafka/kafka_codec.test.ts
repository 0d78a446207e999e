import t from "tap";
import { KafkaDecodeError, KafkaReader, KafkaWriter } from "../../src/kafka/wire/kafka_codec.ts";

t.test("every primitive written reads back, nulls included", (t) => {
  const w = new KafkaWriter(1 << 16, 4);
  w.int8(-3).int16(-300).int32(-70000).int64(1_700_000_000_123).boolean(true).uvarint(300).uvarint(0);
  w.nullableString("héllo").nullableString(null).compactNullableString("ok").compactNullableString(null);
  w.nullableBytes(new Uint8Array([1, 2])).nullableBytes(null).compactNullableBytes(new Uint8Array([9]));
  w.array([1, 2, 3], (x, v) => x.int32(v)).compactArray(["a", "b"], (x, v) => x.compactNullableString(v));
  w.emptyTaggedFields();
  const r = new KafkaReader(w.bytes());
  t.same(
    [r.int8(), r.int16(), r.int32(), r.int64(), r.boolean(), r.uvarint(), r.uvarint()],
    [-3, -300, -70000, 1_700_000_000_123, true, 300, 0],
  );
  t.same([r.nullableString(), r.nullableString(), r.compactNullableString(), r.compactNullableString()], [
    "héllo",
    null,
    "ok",
    null,
  ]);
  t.same([r.nullableBytes(), r.nullableBytes(), r.compactNullableBytes()], [
    new Uint8Array([1, 2]),
    null,
    new Uint8Array([9]),
  ]);
  t.same(r.array((x) => x.int32(), 4), [1, 2, 3]);
  t.same(r.compactArray((x) => x.compactString()), ["a", "b"]);
  r.skipTaggedFields();
  t.equal(r.remaining, 0);
  t.end();
});

t.test("an unsigned varint has Kafka's encoding: 300 is ac 02", (t) => {
  t.same([...new KafkaWriter(8).uvarint(300).bytes()], [0xac, 0x02]);
  t.same([...new KafkaWriter(8).uvarint(127).bytes()], [0x7f]);
  t.throws(() => new KafkaReader(new Uint8Array(6).fill(0x80)).uvarint(), /longer than 5 bytes/);
  t.end();
});

t.test("the writer refuses to grow past its bound; the reader refuses what is not there", (t) => {
  const w = new KafkaWriter(8);
  w.int32(1).int32(2);
  t.throws(() => w.int8(0), /over 8 bytes/);
  t.throws(
    () => new KafkaReader(new Uint8Array([0, 5, 65])).string(),
    KafkaDecodeError,
    "5 bytes announced, 1 there",
  );
  t.throws(() => new KafkaReader(new Uint8Array([0xff, 0xff])).string(), /may not be null/);
  t.throws(() => new KafkaReader(new Uint8Array([0, 1, 0xff])).string(), /not UTF-8/);
  const beyond = new KafkaWriter(8);
  new DataView(beyond.int32(0).int32(0).bytes().buffer).setBigInt64(0, 2n ** 60n);
  t.throws(() => new KafkaReader(beyond.bytes()).int64(), /beyond ±2\^53/);
  t.end();
});
