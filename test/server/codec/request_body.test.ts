import t from "tap";
import { BufferPool } from "../../../src/runtime/memory/buffers.ts";
import { ApiError } from "../../../src/server/api_errors.ts";
import { readBody } from "../../../src/server/codec/request_body.ts";
import { pieceStream } from "../../../scripts/lib/piece_stream.ts";
import { byteStream } from "../../helpers/byte_stream.ts";

function post(body: BodyInit, contentLength?: number): Request {
  return new Request("http://strata.test/streams/s/topics/t/messages", {
    method: "POST",
    body,
    headers: contentLength === undefined ? {} : { "content-length": String(contentLength) },
    duplex: "half",
  } as RequestInit);
}

const pattern = (n: number, seed: number) => new Uint8Array(n).map((_, i) => (i * 31 + seed) & 0xff);

// `Deno.serve` streams a connection's first request as bytes and later ones as pieces of their own.
for (const [kind, stream] of [["a byte stream", byteStream], ["pieces", pieceStream]] as const) {
  t.test(`a body of a declared length, as ${kind}, is read into a pooled buffer, given back on release`, async (t) => {
    const pool = new BufferPool({ bufferBytes: 64 * 1024, buffersMax: 2 });
    const bytes = pattern(40_000, 1);
    const body = await readBody(post(stream(bytes, 7_000), bytes.length), 1 << 20, pool);
    t.same(Buffer.from(body.bytes), Buffer.from(bytes), "every byte, in order");
    t.equal(body.bytes.buffer.byteLength, 64 * 1024, "the bytes sit in a pooled buffer");
    t.equal(pool.lentCount, 1, "lent while the request holds it");
    body.release();
    body.release();
    t.equal(pool.lentCount, 0, "given back once, however often released");
    t.equal(pool.freeCount, 1, "and kept for the next body");
    const next = await readBody(post(stream(pattern(1_000, 2), 1_000), 1_000), 1 << 20, pool);
    t.equal(pool.freeCount, 0, "the next body takes the kept buffer instead of a new one");
    t.same(Buffer.from(next.bytes), Buffer.from(pattern(1_000, 2)), "and reads its own bytes");
    next.release();
  });
}

t.test("a body longer than its content-length is a 400, and the buffer goes back", async (t) => {
  const pool = new BufferPool({ bufferBytes: 64 * 1024, buffersMax: 2 });
  const error = await readBody(post(byteStream(pattern(5_000, 3), 1_000), 4_000), 1 << 20, pool).then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(error instanceof ApiError && error.status === 400, "a 400");
  t.match(
    (error as Error).message,
    /Cannot accept request: the body is longer than its content-length \(4000 bytes\)/,
  );
  t.equal(pool.lentCount, 0, "nothing left lent");
  t.equal(pool.freeCount, 1, "the buffer is back");
});

t.test("a stream that fails part way fails the read, and the pool stops counting the buffer", async (t) => {
  const pool = new BufferPool({ bufferBytes: 64 * 1024, buffersMax: 1 });
  await t.rejects(
    readBody(post(byteStream(pattern(30_000, 4), 10_000, 20_000), 30_000), 1 << 20, pool),
    /connection reset/,
  );
  t.equal(pool.lentCount, 0, "the bound counts no buffer that cannot come back");
  const next = await readBody(post(byteStream(pattern(100, 5), 100), 100), 1 << 20, pool);
  t.equal(next.bytes.buffer.byteLength, 64 * 1024, "so the next body still gets a pooled buffer");
  next.release();
});

t.test("bodies the pool cannot take are read the ordinary way, each into a buffer of its own", async (t) => {
  const pool = new BufferPool({ bufferBytes: 64 * 1024, buffersMax: 1 });
  const held = await readBody(post(byteStream(pattern(10, 6), 10), 10), 1 << 20, pool);
  const cases: [string, Request, Uint8Array][] = [
    ["the pool has none to lend", post(byteStream(pattern(500, 7), 100), 500), pattern(500, 7)],
    ["no content-length", post(byteStream(pattern(600, 8), 100)), pattern(600, 8)],
    ["larger than a pooled buffer", post(byteStream(pattern(70_000, 9), 9_000), 70_000), pattern(70_000, 9)],
  ];
  for (const [what, request, expected] of cases) {
    const body = await readBody(request, 1 << 20, pool);
    t.same(Buffer.from(body.bytes), Buffer.from(expected), `${what}: every byte`);
    t.not(body.bytes.buffer.byteLength, 64 * 1024, `${what}: a buffer of its own`);
    body.release();
  }
  t.equal(pool.lentCount, 1, "only the held body's buffer is out");
  held.release();
  t.equal(pool.lentCount, 0);
});

t.test("the limit holds on every path: a 413 naming max_request_bytes", async (t) => {
  const pool = new BufferPool({ bufferBytes: 64 * 1024, buffersMax: 1 });
  await t.rejects(readBody(post(byteStream(pattern(3_000, 11), 1_000), 3_000), 2_000, pool), {
    status: 413,
    message: /max_request_bytes \(2000 bytes\)/,
  });
  await t.rejects(readBody(post(byteStream(pattern(3_000, 12), 1_000)), 2_000, pool), {
    status: 413,
    message: /max_request_bytes/,
  });
  t.equal(pool.lentCount, 0, "no buffer lent for a refused body");
});

t.test("a body in pieces longer than its content-length is a 400, and the buffer goes back", async (t) => {
  const pool = new BufferPool({ bufferBytes: 64 * 1024, buffersMax: 1 });
  await t.rejects(readBody(post(pieceStream(pattern(5_000, 14), 1_000), 4_000), 1 << 20, pool), {
    status: 400,
    message: /longer than its content-length \(4000 bytes\)/,
  });
  t.equal(pool.lentCount, 0, "nothing left lent");
  t.equal(pool.freeCount, 1, "the buffer is back");
});

t.test("a content-length that is no length is not trusted with a pooled buffer", async (t) => {
  const pool = new BufferPool({ bufferBytes: 64 * 1024, buffersMax: 1 });
  const body = await readBody(post(byteStream(pattern(700, 15), 100), -5), 1 << 20, pool);
  t.same(Buffer.from(body.bytes), Buffer.from(pattern(700, 15)), "every byte");
  t.equal(pool.lentCount, 0, "read into a buffer of its own");
});
