import { existsSync } from "node:fs";
import t from "tap";
import { StrataClient } from "../../src/client/strata_client.ts";
import { createBucket } from "../helpers/harnesses/s3_harness.ts";
import { startControlledS3rver } from "../helpers/harnesses/s3rver_harness.ts";
import { spawnServer } from "../helpers/spawn_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { payloadOf } from "../helpers/tiered_e2e.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

// A store outage, end to end: the real server on s3rver, which is stopped for a while as producers
// write. Producing goes on, the floor stalls, nothing that is not in the store is evicted, the
// stalled signal rises; once the store is back the floor catches up and the signal falls.

const messagesPerRequest = 16;
const requests = 6;
const waitDeadlineMs = 60_000;
/** The waits of the test: real time, checked every 100 ms, for a minute at most. */
const polled = { deadlineMs: waitDeadlineMs, pace: realTime(100) };

interface SegmentView {
  start_offset: number;
  end_offset: number;
  sealed: boolean;
  location: string;
}

t.test("a store outage stalls the floor and raises the stalled signal while producing goes on", async (t) => {
  const s3 = await startControlledS3rver(t);
  await createBucket(s3.endpoint, "strata-outage");
  const dir = tempDir(t, "strata-outage-");
  const server = await spawnServer([], {
    STRATA_SYSTEM_PATH: `${dir}/data`,
    STRATA_HTTP_ADDRESS: "127.0.0.1:0",
    STRATA_TIERED_STORAGE_BACKEND: "s3",
    STRATA_TIERED_STORAGE_S3_BUCKET: "strata-outage",
    STRATA_TIERED_STORAGE_S3_ENDPOINT: s3.endpoint.endpoint,
    STRATA_TIERED_STORAGE_SEGMENT_UPLOAD_TIMEOUT: "1 s",
    STRATA_TIERED_STORAGE_UPLOAD_STALL_AFTER: "2 s",
    STRATA_TIERED_STORAGE_RETRY_TRANSIENT_MAX: "500 ms",
    AWS_ACCESS_KEY_ID: s3.endpoint.accessKeyId,
    AWS_SECRET_ACCESS_KEY: s3.endpoint.secretAccessKey,
  });
  t.teardown(() => server.stop("SIGKILL"));
  const client = new StrataClient({ baseUrl: server.baseUrl, encoding: "msgpack" });
  const partitionDir = `${dir}/data/streams/1/topics/1/partitions/0`;
  const stalled = async () => {
    const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
    return Number(/^strata_tier_upload_stalled_partitions (\d+)$/m.exec(text)?.[1]);
  };
  const stats = async () =>
    await client.partition("outage", "t", 0) as { tiered_up_to_offset: number; segments: SegmentView[] };
  const lastSealedEnd = (s: { segments: SegmentView[] }) =>
    s.segments.filter((x) => x.sealed).at(-1)!.end_offset;
  let produced = 0;
  const produce = async () => {
    const startedMs = Date.now();
    for (let i = 0; i < requests; i++) {
      const batch = Array.from(
        { length: messagesPerRequest },
        (_, j) => ({ payload: payloadOf(produced + j) }),
      );
      const r = await client.produce("outage", "t", batch, 0);
      t.equal(r.base_offset, produced, "each batch where it belongs");
      produced += messagesPerRequest;
    }
    return Date.now() - startedMs;
  };

  await client.createStream("outage");
  await client.createTopic("outage", {
    name: "t",
    partitions: 1,
    segment_size: "1 MiB",
    local_retention_size: "1 MiB",
  });
  const beforeMs = await produce();
  t.ok(
    await client.awaitTiered("outage", "t", 0, lastSealedEnd(await stats()) + 1, waitDeadlineMs),
    "tiered",
  );
  const floorBefore = (await stats()).tiered_up_to_offset;
  t.equal(await stalled(), 0, "not stalled while the store answers");

  await s3.stop();
  const duringMs = await produce();
  t.ok(
    duringMs < Math.max(10 * beforeMs, 5000),
    `producing went on (${duringMs} ms against ${beforeMs} ms before)`,
  );
  await waitFor("the stalled signal to rise", async () => (await stalled()) === 1, polled);
  const during = await stats();
  t.equal(during.tiered_up_to_offset, floorBefore, "the floor did not move");
  t.ok(lastSealedEnd(during) + 1 > floorBefore, "sealed segments wait above it");
  for (const s of during.segments.filter((x) => x.start_offset >= floorBefore)) {
    t.equal(s.location, "local", `segment ${s.start_offset} above the floor is local`);
    t.ok(
      existsSync(`${partitionDir}/${String(s.start_offset).padStart(20, "0")}.log`),
      "its .log is on disk",
    );
  }

  await s3.restart();
  const caughtUp = await client.awaitTiered("outage", "t", 0, lastSealedEnd(during) + 1, waitDeadlineMs);
  t.ok(caughtUp, "after the store returns the floor catches up");
  await waitFor("the stalled signal to fall", async () => (await stalled()) === 0, polled);
  let next = 0;
  let intact = 0;
  for (let polls = 0; next < produced && polls < produced; polls++) {
    const read = await client.poll("outage", "t", 0, { offset: next, count: produced - next });
    if (read.messages.length === 0) break;
    intact += read.messages.filter((m) =>
      Buffer.compare(Buffer.from(m.payload!), Buffer.from(payloadOf(m.offset))) === 0
    ).length;
    next = read.next_offset;
  }
  t.equal(intact, produced, "every message reads back, each with its own bytes");
  t.equal(await server.stop("SIGTERM"), 0);
});
