import { BufferPool } from "../../src/runtime/memory/buffers.ts";
import { join } from "node:path";
import t from "tap";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import type { StrataServer } from "../../src/server/server.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { streamedBodyBytesMin, unpackMsgpack } from "../../src/server/codec/body_codec.ts";
import { createHttpHandler } from "../../src/server/http_handler.ts";
import { openServer } from "../helpers/open_server.ts";
import { RecordingGate } from "../helpers/recording_gate.ts";

const get = (server: StrataServer, path: string, method = "GET") =>
  server.handler(new Request(`http://strata.test${path}`, { method }));

t.test("/metrics serves the pump lateness histogram in Prometheus text format", async (t) => {
  const { server, clock } = await openServer(t);
  clock.advance(100);
  const response = await get(server, "/metrics");
  t.equal(response.status, 200);
  t.match(response.headers.get("content-type"), /^text\/plain/);
  const text = await response.text();
  t.match(text, /# TYPE strata_pump_tick_lateness_seconds histogram/);
  t.match(
    text,
    /strata_pump_tick_lateness_seconds_count\{shard="0"\} 10/,
    "ten ticks in 100 ms of virtual time",
  );
  t.match(text, /strata_process_resident_memory_bytes \d+/);
});

t.test("/health answers with each shard's tick lateness", async (t) => {
  const { server, clock } = await openServer(t);
  clock.advance(20);
  const response = await get(server, "/health");
  t.equal(response.status, 200);
  const body = await response.json();
  t.equal(body.status, "ok");
  t.equal(body.shards[0].shard, "0");
  t.equal(body.shards[0].ticks, 2);
  t.same(Object.keys(body.shards[0].tick_lateness_ms), ["p50", "p99", "p999", "max"]);
});

t.test("unknown paths get 404 and wrong methods 405, both as JSON errors", async (t) => {
  const { server } = await openServer(t);
  const missing = await get(server, "/nope");
  t.equal(missing.status, 404);
  t.same(await missing.json(), { error: "not_found", message: "Cannot GET /nope: no such endpoint" });
  const wrong = await get(server, "/metrics", "POST");
  t.equal(wrong.status, 405);
  t.equal(wrong.headers.get("allow"), "GET, HEAD");
  t.equal((await wrong.json()).error, "method_not_allowed");
});

t.test("a refusal's JSON body is its code and message only, never what its cause holds", async (t) => {
  const { server } = await openServer(t);
  // The parse error (the cause) quotes the body; the answer must not.
  const response = await server.handler(
    new Request("http://strata.test/streams", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "s3cr3t-token, not JSON",
    }),
  );
  t.equal(response.status, 400);
  const text = await response.text();
  t.equal(
    text,
    JSON.stringify({ error: "malformed_body", message: "Cannot parse request body: it is not valid JSON" }),
    "exactly the code and the message",
  );
  t.notMatch(text, /s3cr3t/, "nothing of the cause");
});

t.test("opening the server creates the data directory", async (t) => {
  const { dir } = await openServer(t);
  t.ok(await new NodeDisk().stat(join(dir, "data")), "data directory exists");
});

t.test("requests that arrive together start on turns of their own, and a produce decodes its body on another", async (t) => {
  const { server } = await openServer(t);
  const gate = new RecordingGate();
  t.teardown(() => gate.stop());
  const handler = createHttpHandler({
    registry: server.registry,
    pumps: server.pumps,
    catalog: server.catalog,
    dataPlane: server.dataPlane,
    logger: silentLogger(),
    maxRequestBytes: 1 << 20,
    requestBodies: new BufferPool({ bufferBytes: 1 << 20, buffersMax: 1 }),
    tokens: [],
    pieceGate: gate,
  });
  const call = (path: string, init?: RequestInit) => handler(new Request(`http://strata.test${path}`, init));
  const answers = await Promise.all(Array.from({ length: 8 }, () => call("/health")));
  t.ok(answers.every((a) => a.status === 200), "every request answered");
  t.equal(gate.turnsAt.length, 8, "one turn per request");
  t.equal(new Set(gate.turnsAt).size, 8, "each in a loop iteration of its own");
  gate.turnsAt.length = 0;
  const json = { "content-type": "application/json" };
  t.equal(
    (await call("/streams", { method: "POST", headers: json, body: JSON.stringify({ name: "s" }) })).status,
    201,
  );
  t.equal(gate.turnsAt.length, 2, "a request with a body: one turn to start, one to decode it");
});

t.test("a large msgpack answer is handed over as a stream with its length, not copied into the response", async (t) => {
  const { server, client } = await openServer(t);
  const c = client("msgpack");
  await c.createStream("s");
  await c.createTopic("s", { name: "t", partitions: 1 });
  const payload = new Uint8Array(1024).fill(5);
  await c.produce("s", "t", Array.from({ length: 100 }, () => ({ payload })), 0);
  const response = await server.handler(
    new Request("http://strata.test/streams/s/topics/t/partitions/0/messages?offset=0&count=100", {
      headers: { accept: "application/msgpack" },
    }),
  );
  t.equal(response.status, 200);
  const bytes = new Uint8Array(await response.arrayBuffer());
  t.ok(bytes.length >= streamedBodyBytesMin, `${bytes.length} bytes, above the streaming threshold`);
  t.equal(response.headers.get("content-length"), String(bytes.length), "the length is declared");
  const answer = unpackMsgpack(bytes) as { messages: { payload: Uint8Array }[] };
  t.equal(answer.messages.length, 100, "every message");
  t.ok(
    answer.messages.every((m) => m.payload!.length === 1024 && m.payload!.every((b) => b === 5)),
    "intact",
  );
});
