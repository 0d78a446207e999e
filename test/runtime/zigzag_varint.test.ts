import t from "tap";
import { readZigzag, varintBytesMax, writeZigzag, zigzagBytes } from "../../src/runtime/zigzag_varint.ts";

t.test("zigzag varints: protobuf's known encodings, and round trips at the edges", (t) => {
  // Protobuf's sint encodings: 0 → 00, -1 → 01, 1 → 02, -64 → 7f, 64 → 80 01, 300 → d8 04.
  const known: [number, number[]][] = [[0, [0]], [-1, [1]], [1, [2]], [-64, [0x7f]], [64, [0x80, 1]], [300, [
    0xd8,
    4,
  ]]];
  for (const [value, bytes] of known) {
    const out = new Uint8Array(10);
    t.equal(writeZigzag(out, 0, value), bytes.length, `${value} takes ${bytes.length} bytes`);
    t.same([...out.subarray(0, bytes.length)], bytes, `${value} encodes as Kafka and protobuf do`);
    t.same(readZigzag(Uint8Array.from(bytes), 0), { value, next: bytes.length });
  }
  for (const value of [2 ** 31 - 1, -(2 ** 31), 1_700_000_000_000, -(2 ** 52), 2 ** 52 - 1]) {
    const out = new Uint8Array(zigzagBytes(value));
    t.equal(writeZigzag(out, 0, value), out.length);
    t.equal(readZigzag(out, 0)?.value, value, `${value} round-trips`);
  }
  t.end();
});

t.test("a truncated or overlong varint reads as null; an unencodable value throws", (t) => {
  t.equal(readZigzag(Uint8Array.from([0x80, 0x80]), 0), null, "truncated");
  t.equal(readZigzag(new Uint8Array(6).fill(0x80), 0, varintBytesMax), null, "longer than five bytes");
  t.equal(readZigzag(new Uint8Array(11).fill(0xff), 0), null, "beyond 2^53");
  t.equal(readZigzag(Uint8Array.from([5]), 1), null, "past the end");
  t.throws(() => writeZigzag(new Uint8Array(10), 0, 1.5), RangeError);
  t.throws(() => zigzagBytes(2 ** 52), RangeError, "2^52 has no exact zigzag");
  t.end();
});
