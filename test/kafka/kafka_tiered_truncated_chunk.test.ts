import { truncateSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { kafkaErrorCode } from "../../src/kafka/kafka_errors.ts";
import type { KafkaReader } from "../../src/kafka/wire/kafka_codec.ts";
import { apiKey } from "../../src/kafka/wire/frame_codec.ts";
import { Logger } from "../../src/runtime/logger.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { InFlightDisk } from "../helpers/disks/in_flight_disk.ts";
import { openTestListener } from "../helpers/kafka/kafka_listener.ts";
import { fetchBody, kafkaRequest, KafkaWireClient, readFetchAnswer } from "../helpers/kafka/kafka_wire.ts";
import { openServer } from "../helpers/open_server.ts";
import { filesUnder } from "../helpers/files_under.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { virtualTime, waitFor } from "../helpers/wait_for.ts";

// A Kafka fetch of evicted data whose chunk file was truncated on disk after the cache filled it, in
// process on the virtual clock: the cache drops the file, counts it and fetches the chunk again, and
// the fetch answers the same records, never an error.
t.test("a fetch of evicted data whose cached chunk file was truncated on disk answers its records", async (t) => {
  const disk = new InFlightDisk(new NodeDisk());
  const dir = tempDir(t);
  const s = await openServer(t, {}, dir, disk);
  const c = s.client();
  /**
   * Ticks virtual time 20 ms at a time, letting the work each tick started run; the clock stands
   * still while disk operations are in flight (for 120 s of real time at most per wait). A wait may
   * take 3000 ticks (60 virtual s).
   */
  const ticks = () => ({
    deadlineMs: 60_000,
    pace: virtualTime(s.clock, 20, { quietDisk: disk, ioWaitMaxMs: 120_000 }),
  });
  await c.createStream("kafka");
  await c.createTopic("kafka", { name: "t", segment_size: "1 MiB", local_retention_size: "1 MiB" });
  for (let i = 0; i < 40; i++) {
    await c.produce("kafka", "t", [{ payload: new Uint8Array(100_000).fill(i) }], 0);
  }
  await waitFor("two segments to be evicted", async () => {
    const p = await c.partition("kafka", "t", 0) as { segments: { location: string }[] };
    return p.segments.filter((x) => x.location === "remote").length >= 2;
  }, ticks());

  const logged: string[] = [];
  const logger = new Logger({ level: "error", sink: (line) => logged.push(line) });
  const listener = await openTestListener(t, s.server, s.clock, {}, logger);
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
  const metric = async (name: string, pattern = new RegExp(`^${name} (\\d+)$`, "m")) =>
    Number(pattern.exec(await s.server.registry.getSingleMetricAsString(name))?.[1] ?? 0);
  const gets = () => metric("strata_objectstore_requests_total", /op="get"\} (\d+)/);

  const healthy = await fetchAt(1, 0);
  t.equal(healthy.errorCode, kafkaErrorCode.none);
  t.ok(healthy.records.length > 100_000, `${healthy.records.length} bytes of records`);
  await waitFor("the chunk to be cached", async () => await metric("strata_cache_chunks") >= 1, ticks());
  const files = filesUnder(join(dir, "data", "cache")).filter((f) => f.includes(".log_chunks/"));
  t.ok(files.length >= 1, `${files.length} chunk files`);
  const getsBefore = await gets();
  const corruptBefore = await metric("strata_cache_corrupt_chunk_files_total");
  for (const file of files) truncateSync(file, 0);

  const healed = await fetchAt(2, 0);
  t.equal(healed.errorCode, kafkaErrorCode.none, "no error");
  t.same(healed.records, healthy.records, "the same records, byte for byte");
  t.equal(
    await metric("strata_cache_corrupt_chunk_files_total"),
    corruptBefore + 1,
    "strata_cache_corrupt_chunk_files_total rose by one",
  );
  t.ok(await gets() > getsBefore, "the chunk was fetched again from the store");
  t.same(logged, [], "no unexpected failure");
});
