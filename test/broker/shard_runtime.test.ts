import t from "tap";
import { openServer } from "../helpers/open_server.ts";

// The shard runtime's duties, seen through a running server: total retention from the tick.

const payload = (n: number) => new Uint8Array(n).fill(7);
/** Waits, in real time and at most 5 s, for a background pass on the real disk to show its effect. */
async function eventually(check: () => Promise<boolean>): Promise<boolean> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return false;
}

t.test("total retention runs from the shard's tick and keeps a partition within retention_max_bytes", async (t) => {
  const { client, clock } = await openServer(t);
  const c = client();
  await c.createStream("s");
  await c.createTopic("s", { name: "t", segment_size: "1 MiB", retention_max_bytes: "3 MiB" });
  for (let i = 0; i < 80; i++) await c.produce("s", "t", [{ payload: payload(100_000) }], 0);
  const before = await c.partition("s", "t", 0);
  t.ok((before["size_bytes"] as number) > 7_000_000, "about 8 MB written");
  clock.advance(1000);
  const within = await eventually(async () =>
    ((await c.partition("s", "t", 0))["size_bytes"] as number) <= 3 * 1024 * 1024
  );
  const after = await c.partition("s", "t", 0);
  t.ok(within, `retained ${after["size_bytes"]} bytes`);
  t.ok((after["first_offset"] as number) > 0, "the oldest messages are gone");
  const polled = await c.poll("s", "t", 0, { offset: 0, count: 1 });
  t.equal(
    polled.messages[0]!.offset,
    after["first_offset"],
    "a poll from 0 starts at the first retained offset",
  );
});

t.test("total retention by age deletes sealed segments whose newest message is older than retention_max_age", async (t) => {
  const { client, clock } = await openServer(t);
  const c = client();
  await c.createStream("s");
  await c.createTopic("s", { name: "t", segment_size: "1 MiB", retention_max_age: "1 h" });
  for (let i = 0; i < 25; i++) await c.produce("s", "t", [{ payload: payload(100_000) }], 0);
  clock.advance(1000);
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.equal((await c.partition("s", "t", 0))["first_offset"], 0, "nothing is an hour old yet");
  clock.advance(3_600_000);
  // The tick keeps firing in a running server; here each check moves virtual time one pass on.
  const expired = await eventually(async () => {
    clock.advance(1000);
    return ((await c.partition("s", "t", 0))["segments"] as unknown[]).length === 1;
  });
  t.ok(expired, "every sealed segment expired; the active one stays");
});

t.test("the consumer barrier: total retention of a tiered topic keeps what a stored consumer offset still needs, unless the topic waives it", async (t) => {
  const { client, clock } = await openServer(t);
  const c = client();
  await c.createStream("s");
  await c.createTopic("s", { name: "t", segment_size: "1 MiB", retention_max_bytes: "3 MiB" });
  await c.storeOffset("s", "t", 0, "slow", 5);
  for (let i = 0; i < 60; i++) await c.produce("s", "t", [{ payload: payload(100_000) }], 0);
  const firstOffset = async () => (await c.partition("s", "t", 0))["first_offset"] as number;
  for (let i = 0; i < 20; i++) {
    clock.advance(1000);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  t.equal(await firstOffset(), 0, "the segment holding offset 5 and everything after it stay");

  await c.storeOffset("s", "t", 0, "slow", 25);
  const moved = await eventually(async () => {
    clock.advance(1000);
    return (await firstOffset()) > 0;
  });
  const first = await firstOffset();
  t.ok(moved && first <= 25, `retention moved up to the consumer, not past it (first offset ${first})`);

  t.match(await c.patchTopic("s", "t", { retention_consumer_barrier: false }), {
    retention_consumer_barrier: false,
  });
  const waived = await eventually(async () => {
    clock.advance(1000);
    return ((await c.partition("s", "t", 0))["size_bytes"] as number) <= 3 * 1024 * 1024;
  });
  t.ok(
    waived,
    `with the barrier waived retention reached retention_max_bytes (first offset ${await firstOffset()})`,
  );
  t.ok((await firstOffset()) > 25, "and went past the consumer's offset");
});
