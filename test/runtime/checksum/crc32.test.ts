import t from "tap";
import { crc32, Crc32Stream } from "../../../src/runtime/checksum/crc32.ts";

t.test("crc32 is the CRC32 S3 means by x-amz-checksum-crc32 (the standard check value)", (t) => {
  // CRC-32/ISO-HDLC of "123456789" is 0xCBF43926 by definition; CRC32C's would be 0xE3069283.
  t.equal(crc32(new TextEncoder().encode("123456789")), 0xcbf43926);
  t.equal(crc32(new Uint8Array(0)), 0, "the empty input");
  t.end();
});

t.test("a stream fed in pieces gives the one-shot value, never a negative number", (t) => {
  const bytes = new Uint8Array(3 * 1024 * 1024 + 17);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 131 + (i >> 9)) & 0xff;
  const stream = new Crc32Stream();
  for (let at = 0; at < bytes.length; at += 1024 * 1024) stream.update(bytes.subarray(at, at + 1024 * 1024));
  t.equal(stream.digest(), crc32(bytes));
  t.ok(stream.digest() >= 0 && stream.digest() <= 0xffffffff, "an unsigned 32-bit value");
  const empty = new Crc32Stream();
  t.equal(empty.digest(), 0, "a stream of nothing digests to the empty input's value");
  t.end();
});
