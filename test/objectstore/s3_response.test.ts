import t from "tap";
import { pieceBytesMax } from "../../src/objectstore/object_store.ts";
import { MalformedError, TransportError } from "../../src/objectstore/object_store_errors.ts";
import {
  describeTransport,
  drain,
  header,
  readPieces,
  readText,
  type S3Response,
  slicePieces,
  smallBodyBytesMax,
  streamPieces,
  trimEtag,
} from "../../src/objectstore/s3/s3_response.ts";

/** A body delivering `chunks`, then failing with `failure` when one is given. */
async function* bodyOf(chunks: Uint8Array[], failure?: Error): AsyncGenerator<Uint8Array> {
  for (const chunk of chunks) yield chunk;
  if (failure !== undefined) throw failure;
}

function responseOf(chunks: Uint8Array[], headers: S3Response["headers"] = {}): S3Response {
  return { status: 200, headers, body: bodyOf(chunks) };
}

t.test("readPieces keeps the transport's chunks as views, splitting one over 1 MiB", async (t) => {
  const big = new Uint8Array(pieceBytesMax + 10);
  const small = new Uint8Array(5);
  const pieces = await readPieces(bodyOf([big, small]), big.length + small.length, "Cannot get k");
  t.same(pieces.map((p) => p.length), [pieceBytesMax, 10, 5]);
  t.ok(pieces[0]!.buffer === big.buffer && pieces[1]!.buffer === big.buffer, "views of the chunk, no copies");
  t.equal(pieces[1]!.byteOffset, pieceBytesMax);
  t.ok(pieces[2]!.buffer === small.buffer);
});

t.test("readPieces refuses an answer past what was asked (and the small-body margin)", async (t) => {
  const chunks = [new Uint8Array(smallBodyBytesMax), new Uint8Array(11)];
  const error = await readPieces(bodyOf(chunks), 10, "Cannot get k").catch((e) => e);
  t.ok(error instanceof MalformedError);
  t.equal(error.message, "Cannot get k: the answer is longer than asked");
});

t.test("a body that fails part-way is a TransportError naming the failure's code, kept as its cause", async (t) => {
  const reset = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
  const error = await readPieces(bodyOf([new Uint8Array(3)], reset), 100, "Cannot get k").catch((e) => e);
  t.ok(error instanceof TransportError);
  t.equal(error.message, "Cannot get k: ECONNRESET");
  t.equal(error.cause, reset);
  const streamed = await streamPieces(bodyOf([], reset), 100, "Cannot get k", () => Promise.resolve())
    .catch((e) => e);
  t.ok(streamed instanceof TransportError);
  t.equal(streamed.cause, reset);
});

t.test("streamPieces hands each piece on at its position and counts the bytes", async (t) => {
  const seen: [number, number][] = [];
  const chunks = [new Uint8Array(pieceBytesMax + 1), new Uint8Array(4)];
  const total = await streamPieces(bodyOf(chunks), pieceBytesMax + 5, "Cannot get k", (piece, position) => {
    seen.push([position, piece.length]);
    return Promise.resolve();
  });
  t.equal(total, pieceBytesMax + 5);
  t.same(seen, [[0, pieceBytesMax], [pieceBytesMax, 1], [pieceBytesMax + 1, 4]]);
});

t.test("streamPieces with a gather buffer hands on whole buffers, the last one short, every byte in order", async (t) => {
  // Chunks of uneven sizes, as a transport delivers them; one spans two buffers.
  const bytes = Uint8Array.from({ length: 25 }, (_, i) => i);
  const chunks = [bytes.subarray(0, 3), bytes.subarray(3, 14), bytes.subarray(14, 15), bytes.subarray(15)];
  const gather = new Uint8Array(8);
  const seen: { position: number; bytes: number[]; same: boolean }[] = [];
  const total = await streamPieces(bodyOf(chunks), 25, "Cannot get k", (piece, position) => {
    seen.push({ position, bytes: [...piece], same: piece.buffer === gather.buffer });
    return Promise.resolve();
  }, gather);
  t.equal(total, 25);
  t.same(
    seen.map((s) => [s.position, s.bytes.length]),
    [[0, 8], [8, 8], [16, 8], [24, 1]],
    "pieces of 8, then 1",
  );
  t.same(seen.flatMap((s) => s.bytes), [...bytes], "every byte, in order");
  t.ok(seen.every((s) => s.same), "each piece is the gather buffer, filled again after the sink is done");
  const long = await streamPieces(bodyOf(chunks), 24, "Cannot get k", () => Promise.resolve(), gather)
    .catch((e) => e);
  t.ok(long instanceof MalformedError, "an answer past what was asked is refused as without one");
});

t.test("streamPieces refuses a chunk past bytesMax and passes the sink's own failure on as it is", async (t) => {
  const sink = () => Promise.resolve();
  const long = await streamPieces(bodyOf([new Uint8Array(6)]), 5, "Cannot get k", sink).catch((e) => e);
  t.ok(long instanceof MalformedError);
  t.equal(long.message, "Cannot get k: the answer is longer than asked");
  const full = new Error("Cannot write chunk: ENOSPC");
  const failed = await streamPieces(
    bodyOf([new Uint8Array(3)]),
    5,
    "Cannot get k",
    () => Promise.reject(full),
  )
    .catch((e) => e);
  t.equal(failed, full, "not wrapped as the transport's");
});

t.test("slicePieces takes a range across pieces as views", (t) => {
  const pieces = [Uint8Array.of(0, 1, 2), Uint8Array.of(3, 4), Uint8Array.of(5, 6, 7)];
  t.same(slicePieces(pieces, 2, 6).map((p) => [...p]), [[2], [3, 4], [5]]);
  t.same(slicePieces(pieces, 3, 5).map((p) => [...p]), [[3, 4]]);
  t.same(slicePieces(pieces, 8, 10), [], "past the end: nothing");
  t.ok(slicePieces(pieces, 0, 2)[0]!.buffer === pieces[0]!.buffer);
  t.end();
});

t.test("readText decodes a small body; drain reads a body to its end", async (t) => {
  const encoder = new TextEncoder();
  t.equal(
    await readText(responseOf([encoder.encode("<Err"), encoder.encode("or/>")]), "Cannot list p/"),
    "<Error/>",
  );
  let pulled = 0;
  const response: S3Response = {
    status: 200,
    headers: {},
    body: (async function* () {
      for (; pulled < 3; pulled++) yield new Uint8Array(1);
    })(),
  };
  await drain(response);
  t.equal(pulled, 3, "every chunk was pulled");
  let dumped = false;
  await drain({
    ...response,
    body: Object.assign(bodyOf([]), { dump: () => Promise.resolve(void (dumped = true)) }),
  });
  t.ok(dumped, "a body that can dump itself is dumped");
});

t.test("header reads the first value or nothing; trimEtag drops S3's quotes; describeTransport names a failure", (t) => {
  const response = responseOf([], { etag: '"abc"', "x-many": ["one", "two"] });
  t.equal(header(response, "etag"), '"abc"');
  t.equal(header(response, "x-many"), "one");
  t.equal(header(response, "absent"), "");
  t.equal(trimEtag('"abc"'), "abc");
  t.equal(trimEtag("abc"), "abc");
  t.equal(describeTransport(Object.assign(new Error("x"), { code: "ECONNREFUSED" })), "ECONNREFUSED");
  t.equal(describeTransport({ message: "m", cause: { code: "ETIMEDOUT" } }), "ETIMEDOUT");
  t.equal(describeTransport(new Error("plain")), "plain");
  t.equal(describeTransport("text"), "text");
  t.end();
});
