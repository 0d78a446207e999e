import { spawn } from "node:child_process";
import { once } from "node:events";
import t from "tap";
import { AssertionError } from "../../../src/runtime/assert.ts";
import { ApiError } from "../../../src/server/api_errors.ts";
import { decodeBody, msgpackResponse, streamedBodyBytesMin } from "../../../src/server/codec/body_codec.ts";

/** An answer as a poll makes it: bytes that are the whole of their own buffer, in a pattern. */
function answerBytes(length: number): Uint8Array<ArrayBuffer> {
  return new Uint8Array(length).map((_, i) => (i * 7) & 0xff);
}

t.test("a large answer's buffer is freed when its reader asks for more after the one piece, not before", async (t) => {
  const bytes = answerBytes(streamedBodyBytesMin + 1000);
  const expected = bytes.slice();
  const freed: ArrayBuffer[] = [];
  const response = msgpackResponse(200, bytes, { freeWhenRead: true, free: (b) => freed.push(b) });
  t.equal(response.headers.get("content-length"), String(expected.length));
  const reader = response.body!.getReader();
  const first = await reader.read();
  t.equal(first.done, false);
  t.same(first.value, expected, "the one piece is the whole answer");
  // Give the stream every chance to run ahead: a source pulled early would free the piece here.
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  t.same(freed, [], "nothing is freed while the reader holds the piece");
  const second = await reader.read();
  t.equal(second.done, true, "the answer is one piece");
  t.equal(freed.length, 1, "freed once, on the next ask");
  t.equal(freed[0], bytes.buffer, "the answer's own buffer");
});

t.test("a reader that cancels after the piece frees the buffer too; a second cancel frees nothing more", async (t) => {
  const bytes = answerBytes(streamedBodyBytesMin);
  const freed: ArrayBuffer[] = [];
  const response = msgpackResponse(200, bytes, { freeWhenRead: true, free: (b) => freed.push(b) });
  const reader = response.body!.getReader();
  await reader.read();
  await reader.cancel();
  await reader.cancel();
  t.equal(freed.length, 1);
});

t.test("a response dropped unread, then cancelled (a client gone), frees its buffer without a read", async (t) => {
  const freed: ArrayBuffer[] = [];
  const response = msgpackResponse(200, answerBytes(streamedBodyBytesMin), {
    freeWhenRead: true,
    free: (b) => freed.push(b),
  });
  await response.body!.cancel();
  t.equal(freed.length, 1);
});

t.test("without freeWhenRead, and below the streaming size, nothing is freed and the bytes stay whole", async (t) => {
  const freed: ArrayBuffer[] = [];
  const free = (b: ArrayBuffer) => freed.push(b);
  const large = answerBytes(streamedBodyBytesMin + 1);
  t.same(new Uint8Array(await msgpackResponse(200, large, { free }).arrayBuffer()), large);
  const small = answerBytes(streamedBodyBytesMin - 1);
  const response = msgpackResponse(200, small, { freeWhenRead: true, free });
  t.same(new Uint8Array(await response.arrayBuffer()), small);
  t.same(freed, [], "neither was freed");
  t.equal(large.length, streamedBodyBytesMin + 1, "the caller's bytes are intact");
});

t.test("freeWhenRead refuses bytes that are only part of their buffer: freeing would take the rest", (t) => {
  const shared = new Uint8Array(2 * streamedBodyBytesMin);
  t.throws(
    () => msgpackResponse(200, shared.subarray(0, streamedBodyBytesMin), { freeWhenRead: true }),
    AssertionError,
  );
  t.end();
});

t.test("under Deno, the server's runtime, a read answer's buffer is really freed (detached)", async (t) => {
  // Node 20, which runs these tests, has no ArrayBuffer transfer; Deno has. The script reads an
  // answer to its end as a client would and reports what it read and what is left of the buffer.
  const script = `
    import { msgpackResponse } from "./src/server/codec/body_codec.ts";
    const bytes = new Uint8Array(200000).map((_, i) => (i * 7) & 0xff);
    const response = msgpackResponse(200, bytes, { freeWhenRead: true });
    let sum = 0, read = 0;
    for await (const piece of response.body) {
      for (const b of piece) sum = (sum + b) % 65521;
      read += piece.length;
    }
    console.log(JSON.stringify({ read, sum, detached: bytes.buffer.detached, left: bytes.length }));
  `;
  const child = spawn("deno", ["eval", "--ext=ts", script], {
    cwd: new URL("../../..", import.meta.url).pathname,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk) => (out += chunk));
  child.stderr.on("data", (chunk) => (err += chunk));
  const [code] = await once(child, "exit");
  t.equal(code, 0, err);
  let sum = 0;
  for (let i = 0; i < 200000; i++) sum = (sum + ((i * 7) & 0xff)) % 65521;
  t.same(JSON.parse(out), { read: 200000, sum, detached: true, left: 0 }, "read whole, then freed");
});

t.test("a body that does not parse is a 400 whose cause is the parser's error", (t) => {
  const refusal = (() => {
    try {
      decodeBody(new TextEncoder().encode("s3cr3t-token, not JSON"), "json");
      return null;
    } catch (error) {
      return error;
    }
  })();
  t.ok(refusal instanceof ApiError, "an API error");
  const api = refusal as ApiError;
  t.same([api.status, api.code, api.message], [
    400,
    "malformed_body",
    "Cannot parse request body: it is not valid JSON",
  ]);
  t.ok(api.cause instanceof SyntaxError, "the parser's error is kept as the cause");
  t.end();
});
