import { existsSync } from "node:fs";
import t, { type Test } from "tap";
import { retentionCheckIntervalMs } from "../../../src/broker/shards/shard_runtime.ts";
import { accessOrderSaveIntervalMs } from "../../../src/tier/cache/cache_core.ts";
import { openServer } from "../../helpers/open_server.ts";
import { settlesWithin } from "../../helpers/wait_for.ts";

// The shard runtime's duties, seen through a running server: total retention from the tick.

const payload = (n: number) => new Uint8Array(n).fill(7);

/**
 * A server on one shard and `retentionPass`, which moves virtual time on by one retention interval
 * (the tick then starts a pass of each hosted partition with limits) and resolves, once the passes
 * have ended, with the segments each deleted: what a test checks afterwards, the pass has done.
 */
async function retentionServer(t: Test) {
  const opened = await openServer(t);
  const shard = opened.server.shards[0]!;
  t.equal(opened.server.shards.length, 1, "one shard runs every partition");
  const retentionPass = async () => {
    opened.clock.advance(retentionCheckIntervalMs);
    return await settlesWithin(shard.retentionPasses(), "the retention pass");
  };
  return { ...opened, c: opened.client(), retentionPass };
}

t.test("total retention runs from the shard's tick and keeps a partition within retention_max_bytes", async (t) => {
  const { c, retentionPass } = await retentionServer(t);
  await c.createStream("s");
  await c.createTopic("s", { name: "t", segment_size: "1 MiB", retention_max_bytes: "3 MiB" });
  for (let i = 0; i < 80; i++) await c.produce("s", "t", [{ payload: payload(100_000) }], 0);
  const before = await c.partition("s", "t", 0);
  t.ok((before["size_bytes"] as number) > 7_000_000, "about 8 MB written");
  const deleted = await retentionPass();
  t.ok(deleted.length === 1 && deleted[0]! > 0, `one pass deleted segments (${deleted})`);
  const after = await c.partition("s", "t", 0);
  t.ok((after["size_bytes"] as number) <= 3 * 1024 * 1024, `retained ${after["size_bytes"]} bytes`);
  t.ok((after["first_offset"] as number) > 0, "the oldest messages are gone");
  const polled = await c.poll("s", "t", 0, { offset: 0, count: 1 });
  t.equal(
    polled.messages[0]!.offset,
    after["first_offset"],
    "a poll from 0 starts at the first retained offset",
  );
});

t.test("total retention by age deletes sealed segments whose newest message is older than retention_max_age", async (t) => {
  const { c, clock, retentionPass } = await retentionServer(t);
  await c.createStream("s");
  await c.createTopic("s", { name: "t", segment_size: "1 MiB", retention_max_age: "1 h" });
  for (let i = 0; i < 25; i++) await c.produce("s", "t", [{ payload: payload(100_000) }], 0);
  t.same(await retentionPass(), [0], "a pass ran and deleted nothing");
  t.equal((await c.partition("s", "t", 0))["first_offset"], 0, "nothing is an hour old yet");
  // Within one advance a pass is started and then runs on real disk: the later ticks of the hour
  // find it in flight. The next pass looks an hour on.
  clock.advance(3_600_000);
  t.same(await retentionPass(), [0], "the pass started at the hour's first second deleted nothing");
  const deleted = await retentionPass();
  const segments = (await c.partition("s", "t", 0))["segments"] as unknown[];
  t.same(deleted, [2], "the pass an hour on deleted both sealed segments");
  t.equal(segments.length, 1, "every sealed segment expired; the active one stays");
});

t.test("the consumer barrier: total retention of a tiered topic keeps what a stored consumer offset still needs, unless the topic waives it", async (t) => {
  const { c, retentionPass } = await retentionServer(t);
  await c.createStream("s");
  await c.createTopic("s", { name: "t", segment_size: "1 MiB", retention_max_bytes: "3 MiB" });
  await c.storeOffset("s", "t", 0, "slow", 5);
  for (let i = 0; i < 60; i++) await c.produce("s", "t", [{ payload: payload(100_000) }], 0);
  const firstOffset = async () => (await c.partition("s", "t", 0))["first_offset"] as number;
  t.same(await retentionPass(), [0], "a pass ran and deleted nothing");
  t.equal(await firstOffset(), 0, "the segment holding offset 5 and everything after it stay");

  await c.storeOffset("s", "t", 0, "slow", 25);
  const moved = await retentionPass();
  const first = await firstOffset();
  t.ok(moved[0]! > 0 && first > 0, `once the consumer moved on, a pass deleted ${moved} segments`);
  t.ok(first <= 25, `up to the consumer, not past it (first offset ${first})`);
  t.same(await retentionPass(), [0], "the next pass goes no further");

  t.match(await c.patchTopic("s", "t", { retention_consumer_barrier: false }), {
    retention_consumer_barrier: false,
  });
  const waived = await retentionPass();
  t.ok(waived[0]! > 0, `with the barrier waived the next pass deleted ${waived} segments`);
  const size = (await c.partition("s", "t", 0))["size_bytes"] as number;
  t.ok(size <= 3 * 1024 * 1024, `and reached retention_max_bytes (${size} bytes)`);
  t.ok((await firstOffset()) > 25, "past the consumer's offset");
});

t.test("the chunk cache's access table is saved from the shard's tick while the server runs, first at 60 s", async (t) => {
  const { server, clock, dir } = await openServer(t);
  const cache = server.shards[0]!.tiering!.cache;
  const table = `${dir}/data/cache/shard-0/access-table.bin`;
  clock.advance(accessOrderSaveIntervalMs - 10);
  await settlesWithin(cache.idle(), "the cache's background work");
  t.notOk(existsSync(table), "no access table before 60 s");
  clock.advance(10);
  await settlesWithin(cache.idle(), "the save the tick started");
  t.ok(existsSync(table), "the tick at 60 s saved it, with the server still running");
});
