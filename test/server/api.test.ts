import t, { type Test } from "tap";
import { StrataApiError } from "../../src/client/strata_client.ts";
import { packMsgpack } from "../../src/server/codec/body_codec.ts";
import { pieceStream } from "../../scripts/lib/piece_stream.ts";
import { byteStream } from "../helpers/byte_stream.ts";
import { openServer } from "../helpers/open_server.ts";

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** Resolves with the API error a call raises; fails the test if it succeeds. */
async function apiError(t: Test, call: Promise<unknown>): Promise<StrataApiError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof StrataApiError) return error;
    throw error;
  }
  t.fail("expected an API error");
  return new StrataApiError(0, "none", "none");
}

for (const encoding of ["json", "msgpack"] as const) {
  t.test(`every endpoint works in ${encoding}`, async (t) => {
    const { client } = await openServer(t);
    const c = client(encoding);
    t.match(await c.createStream("orders"), { id: 1, name: "orders", topics: [] });
    t.match(await c.createTopic("orders", { name: "events", partitions: 3, segment_size: "1 MiB" }), {
      name: "events",
      partitions: 3,
      segment_size: 1048576,
      segment_max_age: null,
    });
    t.same((await c.listStreams()).map((s) => s["name"]), ["orders"]);
    t.match(await c.getStream("orders"), { topics: [{ name: "events", partitions: 3 }] });
    t.match(await c.getTopic("orders", "events"), { partitions: 3, size_bytes: 0 });

    const first = await c.produce("orders", "events", [
      { payload: bytes("a"), key: "k", headers: { h: "v" } },
      { payload: new Uint8Array([0, 1, 255]) },
    ], 1);
    t.same(first, { partition: 1, base_offset: 0, count: 2 });
    t.same(await c.produce("orders", "events", [{ payload: bytes("b") }], 1), {
      partition: 1,
      base_offset: 2,
      count: 1,
    });

    const polled = await c.poll("orders", "events", 1, { offset: 0 });
    t.same(polled.messages.map((m) => m.offset), [0, 1, 2]);
    t.equal(polled.next_offset, 3);
    t.equal(text(polled.messages[0]!.payload!), "a");
    t.same([...polled.messages[1]!.payload!], [0, 1, 255], "binary payload intact");
    t.equal(polled.messages[0]!.key, "k");
    t.same(polled.messages[0]!.headers, [{ name: "h", value: bytes("v") }]);
    t.equal(polled.messages[1]!.key, null);
    t.ok(
      polled.messages[0]!.timestamp > 1_600_000_000_000 && polled.messages[0]!.timestamp < 1e14,
      "timestamps are milliseconds since the epoch",
    );

    // Kafka's model through HTTP: a binary key, a null value, repeated headers with null and
    // binary values, and timestamps the producer chose.
    const binaryKey = new Uint8Array([0xff, 0x00, 0x80]);
    const full = await c.produce("orders", "events", [
      {
        payload: null,
        key: binaryKey,
        headers: [{ name: "h", value: null }, { name: "h", value: new Uint8Array([0xc3]) }, {
          name: "t",
          value: "é",
        }],
        timestamp: 1_650_000_000_000,
      },
      { payload: bytes("later"), key: "", timestamp: 1_650_000_000_500 },
    ], 2);
    const back = await c.poll("orders", "events", 2, { offset: full.base_offset });
    t.equal(back.messages[0]!.payload, null, "a null value reads back null");
    t.same([...back.messages[0]!.keyBytes!], [0xff, 0x00, 0x80], "a binary key, exact");
    t.equal(back.messages[0]!.key, null, "which is not text");
    t.same(back.messages[0]!.headers, [
      { name: "h", value: null },
      { name: "h", value: new Uint8Array([0xc3]) },
      { name: "t", value: bytes("é") },
    ], "repeated names, a null and a binary value, in order");
    t.same(back.messages.map((m) => m.timestamp), [1_650_000_000_000, 1_650_000_000_500]);
    t.equal(back.messages[1]!.key, "", "an empty key is not a null one");

    const byTime = await c.poll("orders", "events", 1, {
      timestamp: polled.messages[2]!.timestamp,
      count: 1,
    });
    t.equal(byTime.messages[0]!.offset, 0, "all three share the first batch's or a later timestamp");

    const stats = await c.partition("orders", "events", 1);
    t.match(stats, {
      first_offset: 0,
      next_offset: 3,
      segments: [{ start_offset: 0, end_offset: 2, sealed: false }],
    });
    t.ok((stats["size_bytes"] as number) > 0);

    await c.storeOffset("orders", "events", 1, "billing", 2);
    t.equal(await c.getOffset("orders", "events", 1, "billing"), 2);

    await c.purgeTopic("orders", "events");
    t.same(await c.poll("orders", "events", 1, { offset: 0 }), { messages: [], next_offset: 0 }, "purged");
    t.equal(
      (await apiError(t, c.getOffset("orders", "events", 1, "billing"))).status,
      404,
      "offsets purged too",
    );

    await c.deleteTopic("orders", "events");
    t.equal((await apiError(t, c.getTopic("orders", "events"))).status, 404);
    await c.deleteStream("orders");
    t.same(await c.listStreams(), []);
  });
}

t.test("without a partition, a keyed batch goes by key hash and an unkeyed one round robin", async (t) => {
  const { client } = await openServer(t);
  const c = client();
  await c.createStream("s");
  await c.createTopic("s", { name: "t", partitions: 4 });
  const keyed = await Promise.all(
    [1, 2, 3].map(() => c.produce("s", "t", [{ payload: bytes("x"), key: "user-42" }])),
  );
  t.equal(new Set(keyed.map((r) => r.partition)).size, 1, "one key, one partition");
  const unkeyed = [];
  for (let i = 0; i < 4; i++) unkeyed.push((await c.produce("s", "t", [{ payload: bytes("x") }])).partition);
  t.same([...unkeyed].sort(), [0, 1, 2, 3], "round robin visits every partition");
});

t.test("an offset beyond the end is an empty result with next_offset, not an error", async (t) => {
  const { client } = await openServer(t);
  const c = client();
  await c.createStream("s");
  await c.createTopic("s", { name: "t" });
  await c.produce("s", "t", [{ payload: bytes("x") }], 0);
  t.same(await c.poll("s", "t", 0, { offset: 1000 }), { messages: [], next_offset: 1 });
});

t.test("errors: 400 for malformed bodies and invalid names, 404 unknown, 409 duplicate, 413 too large", async (t) => {
  const { client, raw } = await openServer(t, { STRATA_HTTP_MAX_REQUEST_BYTES: "4 KiB" });
  const c = client();
  await c.createStream("s");
  await c.createTopic("s", { name: "t", partitions: 2 });
  const expect = async (response: Promise<Response>, status: number, code: string) => {
    const r = await response;
    t.equal(r.status, status, `${code}: status ${status}`);
    t.equal(r.headers.get("content-type"), "application/json");
    const body = await r.json();
    t.equal(body.error, code);
    t.match(body.message, /^Cannot /, `${code} has a "Cannot ..." message`);
  };
  const post = (path: string, body: string | Uint8Array<ArrayBuffer>, type = "application/json") =>
    raw(path, { method: "POST", headers: { "content-type": type }, body });

  await expect(post("/streams", "{not json"), 400, "malformed_body");
  await expect(post("/streams", "[1,2]"), 400, "malformed_body");
  await expect(post("/streams", new Uint8Array([0x82, 0xa1]), "application/msgpack"), 400, "malformed_body");
  await expect(post("/streams", JSON.stringify({ name: ".." })), 400, "invalid_name");
  await expect(post("/streams", JSON.stringify({ name: "a/b" })), 400, "invalid_name");
  await expect(post("/streams", JSON.stringify({ name: "x".repeat(256) })), 400, "invalid_name");
  await expect(post("/streams", JSON.stringify({})), 400, "invalid_name");
  await expect(raw("/streams/-bad"), 400, "invalid_name");
  t.equal(
    (await raw("/streams/%2e%2e")).status,
    404,
    "the URL parser resolves .. away: no route, no path escape",
  );
  await expect(raw("/streams/a%2Fb/topics/t"), 400, "invalid_name");
  await expect(
    post("/streams/s/topics/t/messages", JSON.stringify({ messages: [{ payload: "not base64!" }] })),
    400,
    "invalid_base64",
  );
  await expect(
    post("/streams/s/topics/t/messages", JSON.stringify({ messages: [] })),
    400,
    "invalid_messages",
  );
  await expect(
    post("/streams/s/topics/t/messages", JSON.stringify({ messages: [{ payload: "", headers: { a: 1 } }] })),
    400,
    "invalid_messages",
  );
  await expect(
    post("/streams/s/topics/t/messages", JSON.stringify({ partition: -1, messages: [{ payload: "" }] })),
    400,
    "invalid_partition",
  );
  await expect(
    post("/streams/s/topics", JSON.stringify({ name: "u", partitions: 0 })),
    400,
    "invalid_option",
  );
  await expect(
    post("/streams/s/topics", JSON.stringify({ name: "u", segment_size: "13 B" })),
    400,
    "invalid_option",
  );
  await expect(
    post("/streams/s/topics", JSON.stringify({ name: "u", retention_max_age: "soon" })),
    400,
    "invalid_option",
  );
  await expect(raw("/streams/s/topics/t/partitions/0/messages?offset=-1"), 400, "invalid_query");
  await expect(raw("/streams/s/topics/t/partitions/0/messages?offset=1&timestamp=1"), 400, "invalid_query");
  await expect(raw("/streams/s/topics/t/partitions/0/messages?count=0"), 400, "invalid_query");
  await expect(raw("/streams/s/topics/t/partitions/0/messages?isolation=serializable"), 400, "invalid_query");
  await expect(
    raw("/streams/s/topics/t/partitions/0/messages?isolation=read_committed&timestamp=1"),
    400,
    "invalid_query",
  );
  await expect(raw("/streams/s/topics/t/partitions/abc"), 400, "invalid_partition");
  await expect(
    raw("/streams/s/topics/t/partitions/0/consumers/c/offset", {
      method: "PUT",
      body: JSON.stringify({ offset: "1" }),
    }),
    400,
    "invalid_offset",
  );

  await expect(raw("/streams/nope"), 404, "not_found");
  await expect(raw("/streams/s/topics/nope"), 404, "not_found");
  await expect(raw("/streams/nope/topics/t"), 404, "not_found");
  await expect(raw("/streams/s/topics/t/partitions/2"), 404, "not_found");
  await expect(raw("/streams/s/topics/t/partitions/9/messages"), 404, "not_found");
  await expect(raw("/streams/s/topics/t/partitions/0/consumers/nobody/offset"), 404, "not_found");
  await expect(raw("/nothing/here"), 404, "not_found");

  await expect(post("/streams", JSON.stringify({ name: "s" })), 409, "already_exists");
  await expect(post("/streams/s/topics", JSON.stringify({ name: "t" })), 409, "already_exists");

  const big = JSON.stringify({
    messages: [{ payload: Buffer.from(new Uint8Array(8000)).toString("base64") }],
  });
  await expect(post("/streams/s/topics/t/messages", big), 413, "payload_too_large");
  const streamed = new ReadableStream({
    start(controller) {
      for (let i = 0; i < 10; i++) controller.enqueue(new Uint8Array(1000));
      controller.close();
    },
  });
  await expect(
    raw("/streams/s/topics/t/messages", { method: "POST", body: streamed, duplex: "half" } as RequestInit),
    413,
    "payload_too_large",
  );

  const wrongMethod = await raw("/streams/s", { method: "POST" });
  t.equal(wrongMethod.status, 405);
  t.equal(wrongMethod.headers.get("allow"), "GET, DELETE");
});

t.test("msgpack payloads as raw bytes; a msgpack request gets a msgpack answer", async (t) => {
  const { raw, client } = await openServer(t);
  await client().createStream("s");
  await client().createTopic("s", { name: "t" });
  const response = await raw("/streams/s/topics/t/messages", {
    method: "POST",
    headers: { "content-type": "application/msgpack" },
    body: packMsgpack({ partition: 0, messages: [{ payload: new Uint8Array([9, 8, 7]) }] }),
  });
  t.equal(response.status, 200);
  t.equal(response.headers.get("content-type"), "application/msgpack");
  const polled = await client("msgpack").poll("s", "t", 0);
  t.same([...polled.messages[0]!.payload!], [9, 8, 7]);
});

t.test("with tokens set, every request needs a valid bearer token", async (t) => {
  const { client, raw } = await openServer(t, { STRATA_HTTP_TOKENS: "secret-token-1,secret-token-2" });
  const none = await raw("/streams");
  t.equal(none.status, 401);
  t.same(await none.json(), {
    error: "unauthorized",
    message: "Cannot authorize request: a valid bearer token is required",
  });
  t.equal((await raw("/metrics")).status, 401, "metrics too");
  t.equal((await apiError(t, client("json", "wrong").listStreams())).status, 401);
  t.same(await client("json", "secret-token-2").listStreams(), []);
});

t.test("consumer offsets survive a restart; the stream, topic and data do too", async (t) => {
  const first = await openServer(t);
  const c = first.client();
  await c.createStream("s");
  await c.createTopic("s", { name: "t", partitions: 2 });
  await c.produce("s", "t", [{ payload: bytes("one") }, { payload: bytes("two") }], 1);
  await c.storeOffset("s", "t", 1, "reader", 1);
  await first.close();
  const second = await openServer(t, {}, first.dir);
  const d = second.client();
  t.equal(await d.getOffset("s", "t", 1, "reader"), 1);
  const polled = await d.poll("s", "t", 1);
  t.same(polled.messages.map((m) => text(m.payload!)), ["one", "two"]);
  t.equal((await d.produce("s", "t", [{ payload: bytes("three") }], 1)).base_offset, 2);
});

for (const [kind, stream] of [["bytes", byteStream], ["pieces", pieceStream]] as const) {
  t.test(`produces whose bodies stream as ${kind} share pooled buffers, and every message keeps its own bytes`, async (t) => {
    const { server, client } = await openServer(t);
    const c = client("msgpack");
    await c.createStream("s");
    await c.createTopic("s", { name: "t", partitions: 1 });
    const rounds = 25;
    const produce = (round: number) => {
      const body = packMsgpack({
        partition: 0,
        messages: Array.from(
          { length: 10 },
          (_, i) => ({ payload: new Uint8Array(900).fill(round * 10 + i) }),
        ),
      });
      // As `Deno.serve` passes a socket's body: a stream of a declared length.
      return server.handler(
        new Request("http://strata.test/streams/s/topics/t/messages", {
          method: "POST",
          body: stream(body, 4096),
          headers: { "content-type": "application/msgpack", "content-length": String(body.length) },
          duplex: "half",
        } as RequestInit),
      );
    };
    // More than the pool holds, each started a turn of the loop after the one before, while the log's
    // writer waits on its fsyncs: a buffer given back before the log had copied its body would be
    // lent to a later produce, and some message would carry that produce's bytes.
    const pending: Promise<Response>[] = [];
    for (let round = 0; round < rounds; round++) {
      pending.push(produce(round));
      await new Promise((resolve) => setImmediate(resolve));
    }
    const answers = await Promise.all(pending);
    t.same(answers.map((a) => a.status), Array(rounds).fill(200), "every produce answered 200");
    const polled = await c.poll("s", "t", 0, { offset: 0, count: rounds * 10 });
    const values = polled.messages.map((m) => m.payload![0]!);
    t.ok(
      polled.messages.every((m) => m.payload!.every((b) => b === m.payload![0])),
      "no message mixes bytes",
    );
    t.same(
      [...values].sort((a, b) => a - b),
      Array.from({ length: rounds * 10 }, (_, n) => n),
      "each message once",
    );
  });
}

t.test("timestamp_type log_append_time: the server's time wins over the message's", async (t) => {
  const { client } = await openServer(t);
  const c = client();
  await c.createStream("s");
  await c.createTopic("s", { name: "appended", timestamp_type: "log_append_time" });
  await c.createTopic("s", { name: "created" });
  for (const topic of ["appended", "created"]) {
    await c.produce("s", topic, [{ payload: bytes("x"), timestamp: 5 }], 0);
  }
  const appended = (await c.poll("s", "appended", 0)).messages[0]!.timestamp;
  const created = (await c.poll("s", "created", 0)).messages[0]!.timestamp;
  t.ok(appended > 1_600_000_000_000, `stamped at the append (${appended})`);
  t.equal(created, 5, "kept as the producer set it");
  t.match(await c.getTopic("s", "appended"), { timestamp_type: "log_append_time" });
});
