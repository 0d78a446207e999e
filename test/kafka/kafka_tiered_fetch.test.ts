import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import { kafkaErrorCode } from "../../src/kafka/kafka_errors.ts";
import { apiKey } from "../../src/kafka/wire/frame_codec.ts";
import { Logger } from "../../src/runtime/logger.ts";
import type { Disk } from "../../src/runtime/disk/disk.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { HeldDisk } from "../helpers/disks/held_disk.ts";
import { InFlightDisk } from "../helpers/disks/in_flight_disk.ts";
import { openTestListener } from "../helpers/kafka/kafka_listener.ts";
import { fetchBody, kafkaRequest, KafkaWireClient, readFetchAnswer } from "../helpers/kafka/kafka_wire.ts";
import type { KafkaReader } from "../../src/kafka/wire/kafka_codec.ts";
import { openServer } from "../helpers/open_server.ts";
import { filesUnder } from "../helpers/files_under.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { virtualTime, waitFor } from "../helpers/wait_for.ts";

/**
 * An in-process server on the virtual clock with a tiered Kafka topic "t" whose first segments are
 * evicted; `wrap` may put a disk around the harness's (the fs store reads its objects through it).
 */
async function evictedTopic(t: Test, wrap: (disk: Disk, dir: string) => Disk = (d) => d) {
  const inFlight = new InFlightDisk(new NodeDisk());
  const dir = tempDir(t);
  const s = await openServer(t, {}, dir, wrap(inFlight, dir));
  const c = s.client();
  /**
   * Ticks virtual time 20 ms at a time, letting the work each tick started run; the clock stands
   * still while disk operations are in flight (for 120 s of real time at most per wait). A wait may
   * take 3000 ticks (60 virtual s).
   */
  const ticks = () => ({
    deadlineMs: 60_000,
    pace: virtualTime(s.clock, 20, { settleMs: 2, quietDisk: inFlight, ioWaitMaxMs: 120_000 }),
  });
  await c.createStream("kafka");
  await c.createTopic("kafka", { name: "t", segment_size: "1 MiB", local_retention_size: "1 MiB" });
  for (let i = 0; i < 40; i++) {
    await c.produce("kafka", "t", [{ payload: new Uint8Array(100_000).fill(i) }], 0);
  }
  let remote: { start_offset: number; size_bytes: number; location: string }[] = [];
  await waitFor("two segments to be evicted", async () => {
    const p = await c.partition("kafka", "t", 0) as {
      segments: { start_offset: number; size_bytes: number; location: string }[];
    };
    remote = p.segments.filter((x) => x.location === "remote");
    return remote.length >= 2;
  }, ticks());
  return { s, dir, ticks, remote };
}

// A Kafka fetch of an evicted range, in process on the virtual clock: served through the chunk
// cache, and answered KAFKA_STORAGE_ERROR, never with wrong records, when the object is corrupt.
t.test("a fetch of evicted data: through the cache, and a storage error when the object is damaged", async (t) => {
  const { s, dir, ticks, remote } = await evictedTopic(t);
  const logged: string[] = [];
  const listener = await openTestListener(
    t,
    s.server,
    s.clock,
    {},
    new Logger({
      level: "error",
      sink: (line) => logged.push(line),
    }),
  );
  const client = await KafkaWireClient.connect(listener.address.port);
  t.teardown(() => client.close());
  const fetchAt = async (correlation: number, offset: number) => {
    client.send(kafkaRequest(apiKey.fetch, 11, correlation, fetchBody("t", 0, offset)));
    let answer: KafkaReader | null = null;
    const pending = client.next(120_000).then((r) => (answer = r));
    await waitFor("the fetch to answer", () => answer !== null, ticks());
    await pending;
    answer!.int32();
    return readFetchAnswer(answer!);
  };
  const healthy = await fetchAt(1, 0);
  t.equal(healthy.errorCode, kafkaErrorCode.none);
  const first = healthy.records.subarray(61);
  t.ok(healthy.records.length > 100_000 && first.includes(0), "offset 0's batch");
  const gets = await s.server.registry.getSingleMetricAsString("strata_objectstore_requests_total");
  t.match(gets, /op="get"\} [1-9]/, "read from the store through the cache");

  // Damage every evicted .log object in its first batch (an object's body ends the file), the
  // batch the fetch below starts with; the second segment's object is not in the cache yet.
  const objects = join(dir, "data", "objects");
  const logs = filesUnder(objects).filter((f) => f.endsWith(".log"));
  t.ok(logs.length >= 2, `${logs.length} .log objects`);
  for (const file of logs) {
    const bytes = readFileSync(file);
    bytes[bytes.length - remote[1]!.size_bytes + 500]! ^= 0xff;
    writeFileSync(file, bytes);
  }
  const damaged = await fetchAt(2, remote[1]!.start_offset);
  t.equal(
    damaged.errorCode,
    kafkaErrorCode.kafkaStorageError,
    "the damaged range answers KAFKA_STORAGE_ERROR",
  );
  t.equal(damaged.records.length, 0, "no records, never wrong ones");
  t.same(logged, [], "a refusal the broker knows, not an unexpected failure");
});

// A fetch whose remote read outlasts fetch_timeout answers the partition with no records and no
// error, so the client fetches again; the fill goes on, and the next fetch is served warm.
t.test("a fetch of evicted data that outlasts fetch_timeout answers no records and no error", async (t) => {
  let store!: HeldDisk;
  const { s, ticks, remote } = await evictedTopic(t, (disk, dir) => {
    store = new HeldDisk(disk, `${dir}/data/objects/objects`, "open");
    return store;
  });
  const listener = await openTestListener(t, s.server, s.clock);
  const client = await KafkaWireClient.connect(listener.address.port);
  t.teardown(() => client.close());
  const victim = remote[1]!.start_offset;
  const fetchTimeoutMs = 5000;

  store.hold();
  t.teardown(() => store.release());
  const fetchedAtMs = s.clock.nowMs();
  client.send(kafkaRequest(apiKey.fetch, 11, 1, fetchBody("t", 0, victim)));
  let answer: KafkaReader | null = null;
  const pending = client.next(120_000).then((r) => (answer = r));
  await waitFor("the fetch to answer while the store holds the read", () => answer !== null, ticks());
  await pending;
  t.ok(store.waiting >= 1, "its read of the object was held");
  t.ok(s.clock.nowMs() - fetchedAtMs >= fetchTimeoutMs, "after fetch_timeout, not before");
  answer!.int32();
  const timedOut = readFetchAnswer(answer!);
  t.equal(timedOut.errorCode, kafkaErrorCode.none, "no error");
  t.equal(timedOut.records.length, 0, "no records");
  t.ok(timedOut.highWatermark > victim, "the high watermark is answered");

  store.release();
  const chunks = async () =>
    Number(
      /strata_cache_chunks (\d+)/.exec(await s.server.registry.getSingleMetricAsString("strata_cache_chunks"))
        ?.[1],
    );
  await waitFor("the fill to go on", async () => store.waiting === 0 && await chunks() >= 1, ticks());
  const opens = store.calls;
  client.send(kafkaRequest(apiKey.fetch, 11, 2, fetchBody("t", 0, victim)));
  answer = null;
  const again = client.next(120_000).then((r) => (answer = r));
  await waitFor("the fetch to answer", () => answer !== null, ticks());
  await again;
  answer!.int32();
  const warm = readFetchAnswer(answer!);
  t.equal(warm.errorCode, kafkaErrorCode.none);
  t.ok(warm.records.length > 100_000, "the records, from the cache the first fetch filled");
  t.equal(store.calls, opens, "served warm: no new read of the object");
});

// An object file cut short (shorter than the fs store's header says) is corrupt remote data. The
// store's reads retry it under the non-transient profile until request_timeout, so the first
// fetches answer no records and no error (the fill goes on); then the partition answers
// KAFKA_STORAGE_ERROR, and never a record.
t.test("a fetch of evicted data whose object file was cut short ends in KAFKA_STORAGE_ERROR", async (t) => {
  const { s, dir, ticks, remote } = await evictedTopic(t);
  const logged: string[] = [];
  const listener = await openTestListener(
    t,
    s.server,
    s.clock,
    {},
    new Logger({ level: "error", sink: (line) => logged.push(line) }),
  );
  const client = await KafkaWireClient.connect(listener.address.port);
  t.teardown(() => client.close());
  for (const file of filesUnder(join(dir, "data", "objects")).filter((f) => f.endsWith(".log"))) {
    const bytes = readFileSync(file);
    writeFileSync(file, bytes.subarray(0, bytes.length >> 1));
  }
  const answers: { errorCode: number; records: number }[] = [];
  const fetchedAtMs = s.clock.nowMs();
  // Each fetch waits at most fetch_timeout (5 s); request_timeout is 30 s: 20 fetches are ample.
  for (let correlation = 1; correlation <= 20; correlation++) {
    client.send(kafkaRequest(apiKey.fetch, 11, correlation, fetchBody("t", 0, remote[1]!.start_offset)));
    let answer: KafkaReader | null = null;
    const pending = client.next(120_000).then((r) => (answer = r));
    await waitFor(`fetch ${correlation} to answer`, () => answer !== null, ticks());
    await pending;
    answer!.int32();
    const cut = readFetchAnswer(answer!);
    answers.push({ errorCode: cut.errorCode, records: cut.records.length });
    if (cut.errorCode !== kafkaErrorCode.none) break;
  }
  t.equal(
    answers.at(-1)!.errorCode,
    kafkaErrorCode.kafkaStorageError,
    "the last answer: KAFKA_STORAGE_ERROR",
  );
  t.ok(answers.every((a) => a.records === 0), "no records, ever");
  t.ok(answers.slice(0, -1).every((a) => a.errorCode === kafkaErrorCode.none), "before it, no error");
  t.comment(`${answers.length} fetches, ${Math.round(s.clock.nowMs() - fetchedAtMs)} ms of virtual time`);
  t.same(logged, [], "a refusal the broker knows, not an unexpected failure");
});
