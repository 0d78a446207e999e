import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import t, { type Test } from "tap";
import { StrataApiError } from "../../src/client/strata_client.ts";
import { LocalControlLog } from "../../src/tier/control/local_control_log.ts";
import type { Disk } from "../../src/runtime/disk/disk.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { HeldDisk } from "../helpers/disks/held_disk.ts";
import { InFlightDisk } from "../helpers/disks/in_flight_disk.ts";
import { openServer } from "../helpers/open_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { passTime, virtualTime, waitFor } from "../helpers/wait_for.ts";

// Tiering through the API of an in-process server: the shipped defaults (fs backend, topics
// tiered), a virtual clock ticked by hand and real disk I/O in between.
const payload = (n: number, fill = 7) => new Uint8Array(n).fill(fill);

/** Bound on the real time one wait spends waiting for disk I/O: a stuck operation ends the wait, not the test run. */
const ioWaitMaxMs = 120_000;

/**
 * `around` wraps the disk the server gets outside the in-flight count (given the server's
 * directory), so what it holds back is not waited for as disk I/O.
 */
async function tieredServer(
  t: Test,
  env: Record<string, string> = {},
  around: (disk: Disk, dir: string) => Disk = (disk) => disk,
) {
  const disk = new InFlightDisk(new NodeDisk());
  const dir = tempDir(t);
  const s = await openServer(t, env, dir, around(disk, dir));
  const c = s.client();
  await c.createStream("s");
  /**
   * Ticks virtual time 20 ms at a time, with 2 ms of real time after each tick for the work it
   * started; the clock stands still while disk operations are in flight, so a slow disk slows the
   * test instead of letting virtual time run ahead of it. A wait may take 2000 ticks (40 virtual s).
   */
  const ticks = (deadlineMs = 40_000) => ({
    deadlineMs,
    pace: virtualTime(s.clock, 20, { settleMs: 2, quietDisk: disk, ioWaitMaxMs }),
  });
  return { ...s, c, ticks };
}

t.test("a tiered topic uploads and evicts; stats, metrics and await report the floor; PATCH and its refusal", async (t) => {
  const { c, ticks, server, raw } = await tieredServer(t);
  const topic = await c.createTopic("s", { name: "t", segment_size: "1 MiB", local_retention_size: "2 MiB" });
  t.match(topic, { tiered: true, local_retention_size: 2 * 1024 * 1024, local_retention_age: 86_400_000 });
  for (let i = 0; i < 60; i++) await c.produce("s", "t", [{ payload: payload(100_000, i) }], 0);
  const stats = await c.partition("s", "t", 0) as {
    segments: { end_offset: number; sealed: boolean; location: string }[];
  };
  const lastSealedEnd = stats.segments.filter((s) => s.sealed).at(-1)!.end_offset;
  let awaited: boolean | null = null;
  void c.awaitTiered("s", "t", 0, lastSealedEnd + 1, 60_000).then((r) => (awaited = r));
  await waitFor("the await to answer", () => awaited !== null, ticks());
  t.equal(awaited, true, "200 once the floor passed the last sealed segment");
  await waitFor("segments beyond the 2 MiB envelope to be evicted", async () => {
    const p = await c.partition("s", "t", 0) as { remote_size_bytes: number };
    return p.remote_size_bytes > 0;
  }, ticks());
  const after = await c.partition("s", "t", 0) as Record<string, unknown> & {
    segments: { location: string }[];
  };
  t.equal(after["tiered_up_to_offset"], lastSealedEnd + 1);
  t.ok(
    (after["local_size_bytes"] as number) + (after["remote_size_bytes"] as number) === after["size_bytes"],
  );
  t.ok(after.segments.some((s) => s.location === "remote"));
  const remoteSegments = after.segments.filter((s) => s.location === "remote").length;
  t.equal(after["remote_segments"], remoteSegments, "remote_segments counts the evicted segments");
  t.equal(after["index_cache_bytes"], 0, "no remote index held before a read of evicted data");
  const metrics = await (await raw("/metrics")).text();
  t.match(metrics, new RegExp(`strata_tier_floor_offset\\{partition="1/1/0"\\} ${lastSealedEnd + 1}`));
  // Eviction goes on beside the reads of the view and the scrape: the gauge has at least as many.
  const gauged = /strata_tier_partition_remote_segments\{partition="1\/1\/0"\} (\d+)/.exec(metrics);
  t.ok(gauged !== null && Number(gauged[1]) >= remoteSegments, `the gauge: ${gauged?.[1]}`);
  t.match(metrics, /strata_tier_uploads_completed_total [1-9]\d*/);
  t.match(metrics, /strata_tier_upload_stalled_offset 0/);

  // Evicted data reads back through the chunk cache, byte for byte, across remote and local segments.
  const read: number[] = [];
  for (let offset = 0; offset < 60;) {
    const polled = await c.poll("s", "t", 0, { offset, count: 100, maxBytes: 4 * 1024 * 1024 });
    for (const m of polled.messages) {
      if (m.payload!.length === 100_000 && m.payload!.every((b) => b === (m.offset & 0xff))) {
        read.push(m.offset);
      }
    }
    offset = polled.next_offset;
  }
  t.same(
    read,
    Array.from({ length: 60 }, (_, i) => i),
    "every message from offset 0, remote then local, intact",
  );
  const held = (await c.partition("s", "t", 0) as Record<string, unknown>)["index_cache_bytes"] as number;
  t.ok(held > 0, `the evicted segments' indexes held once read: ${held} bytes`);
  const gaugedIndexes = /strata_tier_partition_index_cache_bytes\{partition="1\/1\/0"\} (\d+)/.exec(
    await (await raw("/metrics")).text(),
  );
  t.equal(Number(gaugedIndexes?.[1]), held, "and gauged per partition");
  // Concurrent polls each answer from their own windows (given back, and reused, once encoded).
  const concurrent = await Promise.all(
    Array.from(
      { length: 8 },
      (_, i) => c.poll("s", "t", 0, { offset: i * 3, count: 3, maxBytes: 4 * 1024 * 1024 }),
    ),
  );
  t.ok(
    concurrent.every((p, i) =>
      p.messages.length === 3 &&
      p.messages.every((m, k) => m.offset === i * 3 + k && m.payload!.every((b) => b === (m.offset & 0xff)))
    ),
    "eight concurrent polls of evicted data, each intact",
  );
  const gets = async () =>
    Number(
      (await (await raw("/metrics")).text()).match(/strata_objectstore_requests_total\{op="get"\} (\d+)/)
        ?.[1] ?? 0,
    );
  const afterCold = await gets();
  await c.poll("s", "t", 0, { offset: 0, count: 5 });
  t.ok(afterCold > 0, `${afterCold} GETs for the first, cold read`);
  t.equal(await gets(), afterCold, "a warm poll makes no object-store request");
  const cacheMetrics = await (await raw("/metrics")).text();
  t.match(cacheMetrics, /strata_cache_misses_total [1-9]/, "cache misses counted");
  t.match(cacheMetrics, /strata_cache_hits_total [1-9]/, "the warm poll was a hit");
  t.match(cacheMetrics, /strata_cache_size_bytes [1-9]\d*/, "cache size reported");

  const refused = await c.patchTopic("s", "t", { tiered: false }).catch((e) => e);
  t.ok(
    refused instanceof StrataApiError && refused.status === 409 && refused.code === "remote_segments_exist",
  );
  const patched = await c.patchTopic("s", "t", { local_retention_size: "8 MiB" });
  t.equal(patched["local_retention_size"], 8 * 1024 * 1024);
  const fixed = await c.patchTopic("s", "t", { partitions: 3 } as never).catch((e) => e);
  t.equal(fixed.status, 400, "partitions are fixed at creation");
  void server;
});

t.test("await times out with 408 when the floor does not get there", async (t) => {
  const { c, ticks } = await tieredServer(t);
  await c.createTopic("s", { name: "t" });
  await c.produce("s", "t", [{ payload: payload(10) }], 0);
  let answer: boolean | null = null;
  void c.awaitTiered("s", "t", 0, 1, 500).then((r) => (answer = r));
  await waitFor("the await to answer", () => answer !== null, ticks());
  t.equal(answer, false, "408: the active segment is never uploaded");
});

t.test("an untiered topic is never uploaded, and total retention raises deleted_up_to_offset", async (t) => {
  const { c, ticks, dir } = await tieredServer(t);
  await c.createTopic("s", { name: "t", segment_size: "1 MiB", tiered: false, retention_max_bytes: "2 MiB" });
  for (let i = 0; i < 40; i++) await c.produce("s", "t", [{ payload: payload(100_000) }], 0);
  await waitFor(
    "the watermark to rise",
    async () => ((await c.partition("s", "t", 0))["deleted_up_to_offset"] as number) > 0,
    ticks(),
  );
  const p = await c.partition("s", "t", 0);
  t.equal(p["deleted_up_to_offset"], p["first_offset"]);
  t.equal(p["tiered_up_to_offset"], 0, "nothing was uploaded");
  // The fs store keeps objects under {data}/objects/objects/{key}; only the boot probe's prefix may exist.
  const clusters = existsSync(`${dir}/data/objects/objects/strata`)
    ? readdirSync(`${dir}/data/objects/objects/strata`)
    : [];
  t.same(clusters.filter((name) => name !== "_probe"), [], "no object of the untiered topic");
});

t.test("crash between the floor command's commit and its apply: the next boot applies it from the control log", async (t) => {
  const first = await tieredServer(t);
  await first.c.createTopic("s", { name: "t", segment_size: "1 MiB", tiered: false });
  for (let i = 0; i < 25; i++) await first.c.produce("s", "t", [{ payload: payload(100_000) }], 0);
  await first.close();
  // Committed but never applied: appended by a log whose apply hook never ran (the process died).
  const control = await LocalControlLog.open(new NodeDisk(), `${first.dir}/data/control/shard-0.log`);
  await control.replay(() => Promise.resolve());
  await control.submit({
    kind: "advance_tiered_floor",
    partition: "1/1/0",
    purgeGeneration: 0,
    upToOffset: 10,
  }, { expectedEpoch: control.epoch() });
  await control.close();
  const second = await openServer(t, {}, first.dir);
  const p = await second.client().partition("s", "t", 0);
  t.equal(p["tiered_up_to_offset"], 10, "replayed at boot and persisted in the superblock");
});

t.test("a byte flipped in an object of the fs store is detected and never served: 502 remote_data_corrupt", async (t) => {
  const { c, ticks, dir, raw } = await tieredServer(t);
  await c.createTopic("s", { name: "t", segment_size: "1 MiB", local_retention_size: "1 MiB" });
  for (let i = 0; i < 40; i++) await c.produce("s", "t", [{ payload: payload(100_000, i) }], 0);
  await waitFor("two segments to be evicted", async () => {
    const p = await c.partition("s", "t", 0) as { segments: { location: string }[] };
    return p.segments.filter((s) => s.location === "remote").length >= 2;
  }, ticks());
  const p = await c.partition("s", "t", 0) as { segments: { start_offset: number; location: string }[] };
  const victim = p.segments.find((s) => s.location === "remote")!;
  const stem = String(victim.start_offset).padStart(20, "0");
  const objects = `${dir}/data/objects/objects`;
  const find = (d: string): string | null => {
    for (const name of readdirSync(d, { withFileTypes: true })) {
      const path = `${d}/${name.name}`;
      if (name.isDirectory()) {
        const found = find(path);
        if (found !== null) return found;
      } else if (name.name === `${stem}.log`) return path;
    }
    return null;
  };
  const file = find(`${objects}/strata`)!;
  t.ok(file, `the object of segment ${victim.start_offset} is ${file}`);
  const bytes = readFileSync(file);
  const flip = bytes.length - 5000;
  bytes[flip] = bytes[flip]! ^ 0x40;
  writeFileSync(file, bytes);

  const error = await c.poll("s", "t", 0, {
    offset: victim.start_offset,
    count: 100,
    maxBytes: 4 * 1024 * 1024,
  })
    .catch((e) => e);
  t.ok(error instanceof StrataApiError, `${error}`);
  t.equal(error.status, 502);
  t.equal(error.code, "remote_data_corrupt", "a code of its own, not the transient one");
  const metrics = await (await raw("/metrics")).text();
  t.match(metrics, /strata_cache_checksum_failures_total [1-9]/, "counted");
  const other = p.segments.find((s) => s.location === "remote" && s.start_offset !== victim.start_offset)!;
  const fine = await c.poll("s", "t", 0, { offset: other.start_offset, count: 3 });
  t.ok(
    fine.messages.every((m) => m.payload!.every((b) => b === (m.offset & 0xff))),
    "other segments still serve",
  );
});

t.test("turning tiering on uploads the sealed segments at once, not after the idle scan's backoff", async (t) => {
  const { c, ticks, raw } = await tieredServer(t);
  const started = async () =>
    Number(
      (await (await raw("/metrics")).text()).match(/strata_tier_uploads_started_total (\d+)/)?.[1] ?? NaN,
    );
  await c.createTopic("s", { name: "t", segment_size: "1 MiB", tiered: false });
  for (let i = 0; i < 25; i++) await c.produce("s", "t", [{ payload: payload(100_000) }], 0);
  await passTime(30_000, ticks().pace); // 30 s of idle scans: the backoff is at its 10 s cap
  t.equal(await started(), 0, "nothing uploaded while the topic was untiered");
  await c.patchTopic("s", "t", { tiered: true });
  // The start, not the floor: an upload's real disk I/O takes virtual time on a slow disk (the floor
  // once took longer than a virtual second in CI), its start only the scan.
  await waitFor(
    "an upload to start within one second of the PATCH",
    async () => (await started()) > 0,
    ticks(1000),
  );
  await waitFor(
    "the floor to move once the upload landed",
    async () => ((await c.partition("s", "t", 0))["tiered_up_to_offset"] as number) > 0,
    ticks(),
  );
});

t.test("a poll whose remote read outlasts fetch_timeout answers 503 transient, counted, and its retry is served from the cache the read filled", async (t) => {
  let store!: HeldDisk;
  const { c, ticks, raw, clock } = await tieredServer(t, {}, (disk, dir) => {
    // The fs store's objects: while held, its GETs do not answer.
    store = new HeldDisk(disk, `${dir}/data/objects/objects`, "open");
    return store;
  });
  await c.createTopic("s", { name: "t", segment_size: "1 MiB", local_retention_size: "1 MiB" });
  for (let i = 0; i < 30; i++) await c.produce("s", "t", [{ payload: payload(100_000, i) }], 0);
  await waitFor("a segment to be evicted", async () => {
    const p = await c.partition("s", "t", 0) as { segments: { location: string }[] };
    return p.segments.some((s) => s.location === "remote");
  }, ticks());
  const p = await c.partition("s", "t", 0) as { segments: { start_offset: number; location: string }[] };
  const victim = p.segments.find((s) => s.location === "remote")!;
  const metric = async (name: string) => {
    const text = await (await raw("/metrics")).text();
    const values = [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)$`, "gm"))];
    return values.reduce((sum, m) => sum + Number(m[1]), 0);
  };
  const path = `/streams/s/topics/t/partitions/0/messages?offset=${victim.start_offset}&count=3`;
  const fetchTimeoutMs = 5000;

  store.hold();
  t.teardown(() => store.release());
  const polledAtMs = clock.nowMs();
  let answer: Response | null = null;
  void raw(path).then((r) => (answer = r));
  await waitFor("the poll to answer while the store holds the read", () => answer !== null, ticks());
  t.ok(store.waiting >= 1, "its read of the object was held");
  t.ok(clock.nowMs() - polledAtMs >= fetchTimeoutMs, "after fetch_timeout, not before");
  const refused = answer! as Response;
  t.equal(refused.status, 503, "503");
  t.equal(refused.headers.get("retry-after"), "1", "retry after 1 s");
  t.match(await refused.json(), { error: "transient" }, "error code transient");
  t.equal(await metric("strata_cache_transient_replies_total"), 1, "counted");

  store.release();
  await waitFor(
    "the read to go on and fill the cache",
    async () => store.waiting === 0 && await metric("strata_cache_chunks") >= 1,
    ticks(),
  );
  const opens = store.calls;
  const hits = await metric("strata_cache_hits_total");
  const retry = await c.poll("s", "t", 0, { offset: victim.start_offset, count: 3 });
  t.same(
    retry.messages.map((m) => m.offset),
    [0, 1, 2].map((i) => victim.start_offset + i),
    "the retry is served",
  );
  t.ok(retry.messages.every((m) => m.payload!.every((b) => b === (m.offset & 0xff))), "payloads intact");
  t.equal(store.calls, opens, "without reading the store again");
  t.ok(await metric("strata_cache_hits_total") > hits, "from the cache");
  t.equal(await metric("strata_cache_transient_replies_total"), 1, "and not counted as transient");
});

t.test("a poll from a timestamp whose message is in an evicted segment starts there, read through the store", async (t) => {
  const { c, ticks, raw, clock } = await tieredServer(t);
  await c.createTopic("s", { name: "t", segment_size: "1 MiB", local_retention_size: "1 MiB" });
  const stampsMs: number[] = [];
  for (let i = 0; i < 30; i++) {
    clock.advance(10);
    stampsMs.push(Math.floor(clock.wallMs()));
    await c.produce("s", "t", [{ payload: payload(100_000, i) }], 0);
  }
  await waitFor("a segment to be evicted", async () => {
    const p = await c.partition("s", "t", 0) as { segments: { location: string }[] };
    return p.segments.some((s) => s.location === "remote");
  }, ticks());
  const p = await c.partition("s", "t", 0) as {
    segments: { start_offset: number; end_offset: number; location: string }[];
  };
  const victim = p.segments.find((s) => s.location === "remote")!;
  const target = victim.start_offset + 3;
  t.ok(target < victim.end_offset, `offset ${target} inside the evicted segment`);
  const gets = async () =>
    Number(
      /strata_objectstore_requests_total\{op="get"\} (\d+)/.exec(await (await raw("/metrics")).text())?.[1] ??
        0,
    );
  const getsBefore = await gets();
  const polled = await c.poll("s", "t", 0, { timestamp: stampsMs[target]! - 1, count: 5 });
  t.same(
    polled.messages.map((m) => m.offset),
    [0, 1, 2, 3, 4].map((i) => target + i),
    "from the message at or after it",
  );
  t.equal(polled.messages[0]!.timestamp, stampsMs[target], "the one stamped at that time");
  t.ok(polled.messages.every((m) => m.payload!.every((b) => b === (m.offset & 0xff))), "payloads intact");
  t.ok(await gets() > getsBefore, "read through the store");
});
