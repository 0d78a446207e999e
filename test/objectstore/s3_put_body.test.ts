import t from "tap";
import { CorruptError, MalformedError } from "../../src/objectstore/object_store_errors.ts";
import { checkedBody, crc32Base64 } from "../../src/objectstore/s3/s3_put_body.ts";
import { crc32 } from "../../src/runtime/checksum/crc32.ts";

/** A body source that reads every piece into one reused buffer, as the uploader does. */
function reusedBuffer(pieces: number[][]) {
  return () => {
    const buffer = new Uint8Array(16);
    return (async function* () {
      for (const piece of pieces) {
        buffer.set(piece);
        yield buffer.subarray(0, piece.length);
      }
    })();
  };
}

/** What `checkedBody` sent before it ended, and how it ended. */
async function sent(body: AsyncGenerator<Uint8Array>): Promise<{ pieces: number[][]; error: unknown }> {
  const pieces: number[][] = [];
  try {
    for await (const piece of body) pieces.push([...piece]);
    return { pieces, error: null };
  } catch (error) {
    return { pieces, error };
  }
}

const pieces = [[1, 2, 3], [4, 5], [6, 7, 8, 9]];
const bytes = new Uint8Array(pieces.flat());

t.test("a body of the declared size and CRC32 goes out whole, each piece a copy of the source's", async (t) => {
  const body = checkedBody(reusedBuffer(pieces), {
    sizeBytes: 9,
    metadata: {},
    ifAbsent: false,
    crc32: crc32(bytes),
  }, "Cannot put k");
  t.same(
    await sent(body),
    { pieces, error: null },
    "the source's buffer was reused, the pieces sent were not",
  );
});

t.test("a body longer than declared is refused at the piece that passes the size", async (t) => {
  const body = checkedBody(
    reusedBuffer(pieces),
    { sizeBytes: 6, metadata: {}, ifAbsent: false },
    "Cannot put k",
  );
  const { pieces: out, error } = await sent(body);
  t.ok(error instanceof MalformedError);
  t.equal((error as Error).message, "Cannot put k: the body is longer than 6 bytes");
  t.same(out, [[1, 2, 3]], "the piece held back (4, 5) never went out");
});

t.test("a body shorter than declared, or with another CRC32, is refused before its last piece goes out", async (t) => {
  const short = checkedBody(
    reusedBuffer(pieces),
    { sizeBytes: 10, metadata: {}, ifAbsent: false },
    "Cannot put k",
  );
  const shortSent = await sent(short);
  t.ok(shortSent.error instanceof MalformedError);
  t.equal((shortSent.error as Error).message, "Cannot put k: the body is 9 bytes, not 10");
  t.same(shortSent.pieces, [[1, 2, 3], [4, 5]]);

  const changed = checkedBody(reusedBuffer(pieces), {
    sizeBytes: 9,
    metadata: {},
    ifAbsent: false,
    crc32: crc32(bytes) ^ 1,
  }, "Cannot put k");
  const changedSent = await sent(changed);
  t.ok(changedSent.error instanceof CorruptError);
  t.equal(
    (changedSent.error as Error).message,
    "Cannot put k: the body's CRC32 does not match the one declared",
  );
  t.same(changedSent.pieces, [[1, 2, 3], [4, 5]]);
});

t.test("an empty body of size 0 sends nothing and succeeds", async (t) => {
  const body = checkedBody(reusedBuffer([]), { sizeBytes: 0, metadata: {}, ifAbsent: false }, "Cannot put k");
  t.same(await sent(body), { pieces: [], error: null });
});

t.test("the CRC32 header value is the checksum's four big-endian bytes in base64", (t) => {
  t.equal(crc32Base64(0xcbf43926), "y/Q5Jg==", "CRC32 of 123456789");
  t.equal(crc32Base64(crc32(new TextEncoder().encode("123456789"))), "y/Q5Jg==");
  t.equal(crc32Base64(0), "AAAAAA==");
  t.end();
});
