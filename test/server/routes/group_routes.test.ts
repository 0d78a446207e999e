import t, { type Test } from "tap";
import { retentionCheckIntervalMs } from "../../../src/broker/shards/shard_runtime.ts";
import type { GroupCoordinator } from "../../../src/groups/group_coordinator.ts";
import { commitOffsets } from "../../../src/groups/core/group_offsets.ts";
import { openServer } from "../../helpers/open_server.ts";
import { realTime, settlesWithin, waitFor } from "../../helpers/wait_for.ts";

// The consumer groups seen through a running server: their committed offsets in total retention's
// consumer barrier, and the HTTP API's /groups.

const payload = (n: number) => new Uint8Array(n).fill(7);

/** A server whose `__consumer_offsets` exists and is loaded. */
async function groupsServer(t: Test) {
  const opened = await openServer(t, {
    STRATA_GROUPS_OFFSETS_TOPIC_PARTITIONS: "2",
    STRATA_GROUPS_GROUP_INITIAL_REBALANCE_DELAY: "0 ms",
  });
  const groups = opened.server.groups!;
  await groups.ensureOffsetsTopic();
  await waitFor("the offsets partitions to load", () => groups.route("g").error === null, {
    deadlineMs: 10_000,
    pace: realTime(50),
  });
  const json = async (path: string, init?: RequestInit) => {
    const response = await opened.raw(path, init);
    return { status: response.status, body: response.status === 204 ? null : await response.json() };
  };
  return { ...opened, groups, json, c: opened.client() };
}

const commit = (groups: GroupCoordinator, groupId: string, topic: string, offsets: number[]) =>
  commitOffsets(groups, {
    groupId,
    memberId: "",
    groupInstanceId: null,
    generation: -1,
    offsets: offsets.map((offset, partition) => ({
      topic,
      partition,
      offset,
      leaderEpoch: -1,
      metadata: null,
    })),
  });

t.test("a group's committed offset holds total retention's consumer barrier, as a stored offset does", async (t) => {
  const { c, groups, clock, server } = await groupsServer(t);
  const shard = server.shards[0]!;
  const retentionPass = async () => {
    clock.advance(retentionCheckIntervalMs);
    return await settlesWithin(shard.retentionPasses(), "the retention pass");
  };
  await c.createTopic("kafka", { name: "t", segment_size: "1 MiB", retention_max_bytes: "3 MiB" });
  t.same((await commit(groups, "slow", "t", [5])).map((r) => r.error), [null]);
  for (let i = 0; i < 60; i++) await c.produce("kafka", "t", [{ payload: payload(100_000) }], 0);
  const firstOffset = async () => (await c.partition("kafka", "t", 0))["first_offset"] as number;
  t.same(await retentionPass(), [0], "a pass ran and deleted nothing");
  t.equal(await firstOffset(), 0, "the group's offset 5 keeps its segment and everything after it");
  await commit(groups, "slow", "t", [25]);
  const moved = await retentionPass();
  const first = await firstOffset();
  t.ok(
    moved[0]! > 0 && first > 0 && first <= 25,
    `once the group moved on, retention went up to it (${first})`,
  );
  t.same(await retentionPass(), [0], "and no further");
});

t.test("/groups lists, describes, resets and deletes groups; refusals are typed", async (t) => {
  const { c, groups, json } = await groupsServer(t);
  await c.createTopic("kafka", { name: "orders", partitions: 2 });
  for (let i = 0; i < 4; i++) await c.produce("kafka", "orders", [{ payload: payload(10) }], i % 2);
  await commit(groups, "g", "orders", [1, 0]);

  t.same((await json("/groups")).body, { groups: [{ group_id: "g", protocol_type: "", state: "Empty" }] });
  const described = await json("/groups/g");
  t.equal(described.status, 200);
  t.same(
    described.body.offsets.map((
      o: { partition: number; offset: number; lag: number },
    ) => [o.partition, o.offset, o.lag]),
    [
      [0, 1, 1],
      [1, 0, 2],
    ],
    "each committed offset with the lag to the partition's end",
  );
  t.equal((await json("/groups/none")).status, 404);

  const reset = await json("/groups/g/offsets", {
    method: "PUT",
    body: JSON.stringify({ topic: "orders", to: "latest" }),
  });
  t.equal(reset.status, 200);
  t.same(reset.body.offsets.map((o: { offset: number; lag: number }) => [o.offset, o.lag]), [[2, 0], [2, 0]]);
  const exact = await json("/groups/g/offsets", {
    method: "PUT",
    body: JSON.stringify({ offsets: [{ topic: "orders", partition: 1, offset: 1 }] }),
  });
  t.same(exact.body.offsets.map((o: { offset: number }) => o.offset), [2, 1]);
  for (
    const [body, code] of [
      [{ offsets: [] }, "invalid_offsets"],
      [{ offsets: [{ topic: "orders", partition: -1, offset: 0 }] }, "invalid_offsets"],
      [{ offsets: [{ topic: "nope", partition: 0, offset: 0 }] }, "unknown_topic_or_partition"],
    ] as const
  ) {
    const refused = await json("/groups/g/offsets", { method: "PUT", body: JSON.stringify(body) });
    t.same([refused.status, refused.body.error], [400, code], JSON.stringify(body));
  }

  // A member joins: its group may not be reset or deleted under it.
  const member = await groups.join({
    groupId: "g",
    memberId: "",
    groupInstanceId: null,
    clientId: "c",
    clientHost: "/127.0.0.1",
    sessionTimeoutMs: 10_000,
    rebalanceTimeoutMs: 10_000,
    protocolType: "consumer",
    protocols: [{ name: "range", metadata: new Uint8Array(0) }],
    requireKnownMemberId: false,
  });
  t.equal(member.error, null);
  const busy = await json("/groups/g/offsets", {
    method: "PUT",
    body: JSON.stringify({ topic: "orders", to: "earliest" }),
  });
  t.equal(busy.status, 409, "no reset while the group has members");
  t.equal((await json("/groups/g", { method: "DELETE" })).status, 409, "no delete either");
  await groups.leave({ groupId: "g", members: [{ memberId: member.memberId, groupInstanceId: null }] });
  t.equal((await json("/groups/g", { method: "DELETE" })).status, 204);
  t.same((await json("/groups")).body, { groups: [] });

  t.equal((await json(`/groups/${"x".repeat(256)}`)).status, 400, "a group id past 255 characters");
  const internal = await json("/streams/kafka/topics/__consumer_offsets/messages", {
    method: "POST",
    body: JSON.stringify({ partition: 0, messages: [{ payload: "AA==" }] }),
  });
  t.same([internal.status, internal.body.error], [400, "internal_topic"]);
  t.equal((await json("/streams/kafka/topics/__consumer_offsets", { method: "DELETE" })).status, 400);
});

t.test("the per-partition consumer offsets of the HTTP API are separate from groups and keep working", async (t) => {
  const { c, json } = await groupsServer(t);
  await c.createTopic("kafka", { name: "orders" });
  await c.storeOffset("kafka", "orders", 0, "reader", 3);
  t.equal(await c.getOffset("kafka", "orders", 0, "reader"), 3);
  t.same((await json("/groups")).body, { groups: [] }, "a stored consumer offset is not a group");
});
