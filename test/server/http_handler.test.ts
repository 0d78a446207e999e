import { join } from "node:path";
import t from "tap";
import { NodeDisk } from "../../src/runtime/node_disk.ts";
import type { StrataServer } from "../../src/server/server.ts";
import { openServer } from "../helpers/open_server.ts";

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

t.test("opening the server creates the data directory", async (t) => {
  const { dir } = await openServer(t);
  t.ok(await new NodeDisk().stat(join(dir, "data")), "data directory exists");
});
