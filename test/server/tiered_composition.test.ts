import t, { type Test } from "tap";
import { type PolledMessage, StrataApiError } from "../../src/client/strata_client.ts";
import type { Disk } from "../../src/runtime/disk/disk.ts";
import { firstRangeBytesMax } from "../../src/tier/cache/tier_remote_reader.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { HeldDisk } from "../helpers/disks/held_disk.ts";
import { InFlightDisk } from "../helpers/disks/in_flight_disk.ts";
import { openServer } from "../helpers/open_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { virtualTime, waitFor } from "../helpers/wait_for.ts";

// The per-class gates the composition gives each shard, through the API of an in-process server
// (fs backend, topics tiered, a virtual clock ticked by hand, real disk I/O in between): fetches
// have their own slots, which uploads never hold, and are paced by fetch_bandwidth alone.

/** Bound on the real time one wait spends waiting for disk I/O: a stuck operation ends the wait, not the test run. */
const ioWaitMaxMs = 120_000;
const messageBytes = 100_000;
const payloadOf = (offset: number) => new Uint8Array(messageBytes).fill(offset & 0xff);

/**
 * A server with the given config overrides; `around` wraps its disk outside the in-flight count
 * (given the server's directory), so what it holds back is not waited for as disk I/O.
 */
async function tieredServer(
  t: Test,
  env: Record<string, string>,
  partitions: number,
  around: (disk: Disk, dir: string) => Disk = (disk) => disk,
) {
  const disk = new InFlightDisk(new NodeDisk());
  const dir = tempDir(t);
  const s = await openServer(t, env, dir, around(disk, dir));
  const c = s.client();
  await c.createStream("s");
  await c.createTopic("s", {
    name: "t",
    partitions,
    segment_size: "1 MiB",
    local_retention_size: "1 MiB",
  });
  /**
   * Ticks virtual time 20 ms at a time, with 2 ms of real time after each tick for the work it
   * started; the clock stands still while disk operations are in flight. A wait may take 2000 ticks
   * (40 virtual s).
   */
  const ticks = (deadlineMs = 40_000) => ({
    deadlineMs,
    pace: virtualTime(s.clock, 20, { settleMs: 2, quietDisk: disk, ioWaitMaxMs }),
  });
  const metric = async (name: string) => {
    const text = await (await s.raw("/metrics")).text();
    const values = [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)$`, "gm"))];
    return values.reduce((sum, m) => sum + Number(m[1]), 0);
  };
  const produced = Array.from({ length: partitions }, () => 0);
  /** `messages` more to partition `id`, each message's bytes its offset's low byte. */
  const produce = async (id: number, messages: number) => {
    for (let i = 0; i < messages; i++, produced[id]!++) {
      await c.produce("s", "t", [{ payload: payloadOf(produced[id]!) }], id);
    }
  };
  const remoteSegments = async () => {
    const p = await c.partition("s", "t", 0) as {
      segments: { start_offset: number; end_offset: number; size_bytes: number; location: string }[];
    };
    return p.segments.filter((x) => x.location === "remote");
  };
  /** Polls, ticking until it answers (bounded); an API error is the answer too. */
  const poll = async (offset: number, count: number) => {
    let answer: { messages: PolledMessage[] } | Error | null = null;
    void c.poll("s", "t", 0, { offset, count }).then((r) => (answer = r), (e: Error) => (answer = e));
    await waitFor("the poll to answer", () => answer !== null, ticks());
    return answer as { messages: PolledMessage[] } | Error | null;
  };
  return { ...s, c, ticks, metric, produce, remoteSegments, poll };
}

const intact = (messages: PolledMessage[]) =>
  messages.every((m) =>
    m.payload!.length === messageBytes && m.payload!.every((b) => b === (m.offset & 0xff))
  );

t.test("a poll of evicted data is served while every upload slot is held in a PUT", async (t) => {
  let creates!: HeldDisk;
  const env = {
    STRATA_TIERED_STORAGE_UPLOAD_CONCURRENCY: "2",
    // Housekeeping stays out, so that every PUT held is an upload's (none is a manifest's).
    STRATA_TIERED_STORAGE_HOUSEKEEPING_IDLE_TIMEOUT: "1 h",
    STRATA_TIERED_STORAGE_HOUSEKEEPING_INTERVAL: "1 d",
  };
  const s = await tieredServer(t, env, 2, (disk, dir) => {
    // The fs store's temp files: while held, its PUTs hang; its GETs go on.
    creates = new HeldDisk(disk, `${dir}/data/objects/tmp`, "create");
    return creates;
  });
  await s.produce(0, 30);
  await waitFor("a segment to be evicted", async () => (await s.remoteSegments()).length > 0, s.ticks());
  const victim = (await s.remoteSegments())[0]!;

  creates.hold();
  t.teardown(() => creates.release());
  // One upload at a time per partition: two partitions take both slots.
  await s.produce(0, 15);
  await s.produce(1, 15);
  await waitFor(
    "both upload slots (upload_concurrency 2) taken by uploads whose PUTs hang",
    async () => creates.waiting === 2 && await s.metric("strata_tier_uploads_in_flight") === 2,
    s.ticks(),
  );

  const polledAtMs = s.clock.nowMs();
  const answer = await s.poll(victim.start_offset, 3);
  t.notOk(
    answer instanceof StrataApiError,
    `served, not refused (${answer instanceof Error ? answer.message : ""})`,
  );
  const messages = answer instanceof Error || answer === null ? [] : answer.messages;
  t.same(
    messages.map((m) => m.offset),
    [0, 1, 2].map((i) => victim.start_offset + i),
    "the evicted messages",
  );
  t.ok(intact(messages), "payloads intact");
  const fetchTimeoutMs = 5000;
  t.ok(
    s.clock.nowMs() - polledAtMs < fetchTimeoutMs,
    `within ${s.clock.nowMs() - polledAtMs} ms, before fetch_timeout`,
  );
  t.equal(creates.waiting, 2, "the uploads' PUTs still hang");
  t.equal(await s.metric("strata_tier_uploads_in_flight"), 2, "and hold both slots");
});

/**
 * Reads every message of partition 0's evicted segments, five at a time, at `fetchBandwidth`; the
 * virtual time the polls took, the bytes they returned and those fetched from the store meanwhile,
 * and the largest segment read (a chunk is at most one: chunk_size is 8 MiB).
 */
async function readEvicted(t: Test, fetchBandwidth: string) {
  const s = await tieredServer(t, {
    STRATA_TIERED_STORAGE_FETCH_BANDWIDTH: fetchBandwidth,
    STRATA_TIERED_STORAGE_CACHE_READAHEAD_MAX: "0",
  }, 1);
  await s.produce(0, 60);
  await waitFor(
    "three segments to be evicted",
    async () => (await s.remoteSegments()).length >= 3,
    s.ticks(),
  );
  const remote = (await s.remoteSegments()).slice(0, 3);
  const fetchedBefore = await s.metric("strata_cache_fetched_bytes_total");
  const startedMs = s.clock.nowMs();
  let polledBytes = 0;
  const lastOffset = remote.at(-1)!.end_offset;
  for (let offset = remote[0]!.start_offset; offset <= lastOffset;) {
    const answer = await s.poll(offset, 5);
    if (answer === null || answer instanceof Error || answer.messages.length === 0) {
      t.fail(`the poll at ${offset} was served: ${answer instanceof Error ? answer.message : answer}`);
      break;
    }
    t.ok(intact(answer.messages), `payloads from ${offset} intact`);
    polledBytes += answer.messages.length * messageBytes;
    offset += answer.messages.length;
  }
  return {
    elapsedMs: s.clock.nowMs() - startedMs,
    polledBytes,
    fetchedBytes: await s.metric("strata_cache_fetched_bytes_total") - fetchedBefore,
    segmentBytesMax: Math.max(...remote.map((r) => r.size_bytes)),
  };
}

t.test("reads of evicted data are paced by fetch_bandwidth: N bytes at B take at least (N - the largest request)/B", async (t) => {
  const rateBytesPerSec = 1024 * 1024;
  const paced = await readEvicted(t, "1 MiB");
  t.ok(
    paced.fetchedBytes >= paced.polledBytes,
    `${paced.fetchedBytes} bytes fetched for ${paced.polledBytes} polled`,
  );
  // The bucket holds a fifth of a second's worth, and a request larger than that is let in on
  // credit once the bucket is full: by time T at most max(burst, largest request) + B·T bytes are in.
  // A request is a chunk (at most a segment) or a cold poll's first range (at most 1 MiB).
  const aheadBytes = Math.max(Math.floor(rateBytesPerSec / 5), paced.segmentBytesMax, firstRangeBytesMax);
  const floorMs = ((paced.fetchedBytes - aheadBytes) * 1000) / rateBytesPerSec;
  t.ok(floorMs >= 1000, `a bound worth testing: ${floorMs} ms`);
  t.ok(
    paced.elapsedMs >= floorMs,
    `${paced.elapsedMs} ms for ${paced.fetchedBytes} bytes, at least ${floorMs} ms`,
  );

  const unpaced = await readEvicted(t, "unlimited");
  t.ok(unpaced.fetchedBytes >= paced.fetchedBytes / 2, `unlimited fetched ${unpaced.fetchedBytes} bytes too`);
  t.ok(
    unpaced.elapsedMs < floorMs,
    `unlimited, the same reads took ${unpaced.elapsedMs} ms: the pacing is the bucket's`,
  );
});
