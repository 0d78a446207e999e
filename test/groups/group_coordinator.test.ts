import t from "tap";
import {
  GroupCoordinator,
  type JoinRequest,
  offsetsPartitionOf,
} from "../../src/groups/group_coordinator.ts";
import {
  commitOffsets,
  fetchOffsets,
  minimumCommitted,
  type OffsetToCommit,
} from "../../src/groups/core/group_offsets.ts";
import { deleteGroups, describeGroups, listGroups } from "../../src/groups/core/group_views.ts";
import { MemoryOffsetsLog } from "../helpers/memory_internal_log.ts";
import { coordinatorOn, flush, loaded } from "../helpers/group_coordinator_fixture.ts";

const bytes = (...b: number[]) => new Uint8Array(b);
const join = (groupId: string, memberId = ""): JoinRequest => ({
  groupId,
  memberId,
  groupInstanceId: null,
  clientId: "client",
  clientHost: "/127.0.0.1",
  sessionTimeoutMs: 10_000,
  rebalanceTimeoutMs: 20_000,
  protocolType: "consumer",
  protocols: [{ name: "range", metadata: bytes(1) }],
  requireKnownMemberId: false,
});

const offset = (partition: number, value: number, metadata: string | null = "m"): OffsetToCommit => ({
  topic: "orders",
  partition,
  offset: value,
  leaderEpoch: 3,
  metadata,
});

/** Two members through a whole rebalance: both joined and synced, the first the leader. */
async function stableGroup(coordinator: GroupCoordinator, groupId: string) {
  const first = coordinator.join(join(groupId));
  await flush();
  const a = await first;
  const second = coordinator.join(join(groupId));
  const again = coordinator.join(join(groupId, a.memberId));
  const [b, a2] = await Promise.all([second, again]);
  const assignments = new Map([[a.memberId, bytes(10)], [b.memberId, bytes(20)]]);
  const [syncA, syncB] = await Promise.all([
    coordinator.sync({
      groupId,
      memberId: a2.memberId,
      groupInstanceId: null,
      generation: a2.generation,
      assignments,
    }),
    coordinator.sync({
      groupId,
      memberId: b.memberId,
      groupInstanceId: null,
      generation: b.generation,
      assignments: new Map(),
    }),
  ]);
  return { leader: a2, follower: b, syncA, syncB };
}

t.test("a group forms, commits, and a second coordinator on the same log takes it over intact", async (t) => {
  const { coordinator, log, clock } = await loaded();
  const { leader, follower, syncA, syncB } = await stableGroup(coordinator, "g");
  t.equal(leader.generation, 2, "the second member's join started a second generation");
  t.equal(leader.leaderId, leader.memberId);
  t.equal(leader.members.length, 2, "the leader gets every member's metadata");
  t.same([syncA.error, syncB.error], [null, null]);
  t.same([...syncA.assignment, ...syncB.assignment], [10, 20], "each member gets its assignment");
  const committed = await commitOffsets(coordinator, {
    groupId: "g",
    memberId: follower.memberId,
    groupInstanceId: null,
    generation: follower.generation,
    offsets: [offset(0, 5), offset(1, 7, null)],
  });
  t.same(committed.map((c) => c.error), [null, null]);
  t.same(fetchOffsets(coordinator, "g", null).topics[0]!.partitions.map((p) => p.offset), [5, 7]);
  t.equal(minimumCommitted(coordinator, "orders", 1), 7, "the barrier sees the commit");
  await flush();
  const p = offsetsPartitionOf("g", 2);
  const kinds = log.records(p).map((r) => r.kind);
  t.ok(kinds.includes("group") && kinds.filter((k) => k === "offset").length === 2, `records: ${kinds}`);

  // Another node takes the partition over: its coordinator reads the log back.
  log.epochs[p] = 1;
  const next = coordinatorOn(log, clock).coordinator;
  next.onTick(clock.nowMs());
  await flush();
  const fetched = fetchOffsets(next, "g", [{ topic: "orders", partitions: [0, 1, 2] }]);
  t.same(
    fetched.topics[0]!.partitions.map((f) => [f.offset, f.leaderEpoch, f.metadata]),
    [[5, 3, "m"], [7, 3, null], [-1, -1, ""]],
  );
  const described = describeGroups(next, ["g"])[0]!;
  t.equal(described.state, "Stable", "the group is stable in its generation");
  t.equal(described.members.length, 2);
  const beat = await next.heartbeat({
    groupId: "g",
    memberId: follower.memberId,
    groupInstanceId: null,
    generation: follower.generation,
  });
  t.equal(beat.error, null, "a member carries on without a rebalance");
});

t.test("a request waiting when leadership moves is told NOT_COORDINATOR; a reload is in progress first", async (t) => {
  const log = new MemoryOffsetsLog(1);
  const { coordinator, clock } = coordinatorOn(log);
  t.equal(coordinator.route("g").error, "coordinator_load_in_progress", "before the first tick's load");
  coordinator.onTick(0);
  await flush();
  const a = await coordinator.join(join("g"));
  const waiting = coordinator.join(join("g"));
  log.epochs[0] = null;
  clock.advance(500);
  coordinator.onTick(clock.nowMs());
  t.equal((await waiting).error, "not_coordinator");
  t.equal(
    (await coordinator.heartbeat({
      groupId: "g",
      memberId: a.memberId,
      groupInstanceId: null,
      generation: 1,
    }))
      .error,
    "not_coordinator",
  );
});

t.test("commits refused as Kafka refuses them, and appends that fail answered by their cause", async (t) => {
  const { coordinator, log } = await loaded();
  const standalone = (offsets: OffsetToCommit[], generation = -1) =>
    commitOffsets(coordinator, { groupId: "solo", memberId: "", groupInstanceId: null, generation, offsets });
  t.same((await standalone([offset(0, 1)], 4)).map((r) => r.error), ["illegal_generation"], "no such group");
  const mixed = await standalone([
    offset(0, 1),
    offset(9, 1),
    { ...offset(1, 1), topic: "nope" },
    offset(2, 1, "far too long"),
  ]);
  t.same(mixed.map((r) => r.error), [
    null,
    "unknown_topic_or_partition",
    "unknown_topic_or_partition",
    "offset_metadata_too_large",
  ]);
  const { NotLeaderError } = await import("../../src/broker/broker_errors.ts");
  log.failNext = new NotLeaderError("moved", 2);
  t.same((await standalone([offset(1, 2)])).map((r) => r.error), ["not_coordinator"]);
  t.equal(
    fetchOffsets(coordinator, "solo", [{ topic: "orders", partitions: [1] }]).topics[0]!.partitions[0]!
      .offset,
    -1,
    "nothing failed is taken",
  );
  t.same((await standalone([offset(1, 2), offset(2, 2), offset(3, 3)])).map((r) => r.error), [
    "offset_metadata_too_large",
    "offset_metadata_too_large",
    "offset_metadata_too_large",
  ], "a fourth partition is past offsets_per_group_max 3");
  const member = await coordinator.join(join("busy"));
  t.same(
    (await commitOffsets(coordinator, {
      groupId: "busy",
      memberId: "someone",
      groupInstanceId: null,
      generation: member.generation,
      offsets: [offset(0, 1)],
    })).map((r) => r.error),
    ["unknown_member_id"],
  );
  t.equal(coordinator.route("").error, "invalid_group_id");
});

t.test("a session that lapses drops its member from the tick; an empty group without offsets is forgotten", async (t) => {
  const { coordinator, clock, log } = await loaded();
  const a = await coordinator.join(join("lapse"));
  t.equal(describeGroups(coordinator, ["lapse"])[0]!.state, "CompletingRebalance");
  clock.advance(9_999);
  coordinator.onTick(clock.nowMs());
  t.equal(describeGroups(coordinator, ["lapse"])[0]!.members.length, 1, "still in its session");
  clock.advance(20_001);
  coordinator.onTick(clock.nowMs());
  t.equal(describeGroups(coordinator, ["lapse"])[0]!.state, "Dead", "gone, with no offsets to keep it");
  t.equal(a.error, null);
  await flush();
  const p = offsetsPartitionOf("lapse", 2);
  t.same(log.records(p).filter((r) => r.kind === "group").at(-1), {
    kind: "group",
    groupId: "lapse",
    value: null,
  });
});

t.test("delete groups: one with members refused, an empty one deleted with its offsets, an unknown one not found", async (t) => {
  const { coordinator, log } = await loaded();
  const { leader, follower } = await stableGroup(coordinator, "d");
  await commitOffsets(coordinator, {
    groupId: "d",
    memberId: leader.memberId,
    groupInstanceId: null,
    generation: leader.generation,
    offsets: [offset(0, 9)],
  });
  t.same((await deleteGroups(coordinator, ["d", "none"])).map((r) => r.error), [
    "non_empty_group",
    "group_id_not_found",
  ]);
  const left = await coordinator.leave({
    groupId: "d",
    members: [{ memberId: leader.memberId, groupInstanceId: null }, {
      memberId: follower.memberId,
      groupInstanceId: null,
    }],
  });
  t.same(left.members.map((m) => m.error), [null, null]);
  t.same(
    listGroups(coordinator).map((g) => [g.groupId, g.state]),
    [["d", "Empty"]],
    "offsets keep the group",
  );
  t.same((await deleteGroups(coordinator, ["d"])).map((r) => r.error), [null]);
  t.same(listGroups(coordinator), []);
  const reloaded = coordinatorOn(log).coordinator;
  reloaded.onTick(0);
  await flush();
  t.same(listGroups(reloaded), [], "its tombstones keep it deleted after a reload");
});

t.test("checkpoints write the live records again and trim the log below them, losing nothing current", async (t) => {
  const { coordinator, log } = await loaded(new MemoryOffsetsLog(1), 256);
  for (let i = 0; i < 40; i++) {
    const result = await commitOffsets(coordinator, {
      groupId: `g${i % 3}`,
      memberId: "",
      groupInstanceId: null,
      generation: -1,
      offsets: [offset(i % 2, i)],
    });
    t.equal(result[0]!.error, null);
  }
  await flush();
  t.ok(log.trims.length >= 2, `${log.trims.length} checkpoints trimmed the log`);
  t.ok(
    log.records(0).length < 40,
    `${log.records(0).length} records left of 40 commits and their checkpoints`,
  );
  const reloaded = coordinatorOn(log).coordinator;
  reloaded.onTick(0);
  await flush();
  for (const group of ["g0", "g1", "g2"]) {
    t.same(
      fetchOffsets(reloaded, group, [{ topic: "orders", partitions: [0, 1] }]).topics[0]!.partitions.map((
        p,
      ) => p.offset),
      fetchOffsets(coordinator, group, [{ topic: "orders", partitions: [0, 1] }]).topics[0]!.partitions.map((
        p,
      ) => p.offset),
      `${group}'s offsets read back the same`,
    );
  }
  t.same(
    fetchOffsets(reloaded, "g0", [{ topic: "orders", partitions: [0, 1] }]).topics[0]!.partitions.map((p) =>
      p.offset
    ),
    [36, 39],
  );
});

t.test("groups_max bounds the groups a join or a commit may create, groups of offsets only among them", async (t) => {
  const { coordinator } = await loaded();
  for (const id of ["a", "b"]) t.equal((await coordinator.join(join(id))).error, null);
  for (const id of ["c", "d"]) {
    const committed = await commitOffsets(coordinator, {
      groupId: id,
      memberId: "",
      groupInstanceId: null,
      generation: -1,
      offsets: [offset(0, 1)],
    });
    t.equal(committed[0]!.error, null);
  }
  t.equal(coordinator.groupCount(), 4);
  t.equal((await coordinator.join(join("e"))).error, "coordinator_not_available");
  const refused = await commitOffsets(coordinator, {
    groupId: "f",
    memberId: "",
    groupInstanceId: null,
    generation: -1,
    offsets: [offset(0, 1)],
  });
  t.equal(refused[0]!.error, "coordinator_not_available");
  t.equal(
    (await coordinator.join(join("c"))).error,
    null,
    "a group known by its offsets may still be joined",
  );
});

t.test("a leave that empties the group is answered once the empty group is in the log, which a new coordinator reads", async (t) => {
  const { coordinator, log, clock } = await loaded();
  const { leader, follower } = await stableGroup(coordinator, "g");
  await commitOffsets(coordinator, {
    groupId: "g",
    memberId: follower.memberId,
    groupInstanceId: null,
    generation: follower.generation,
    offsets: [offset(0, 5)],
  });
  const leaving = (memberId: string) =>
    coordinator.leave({ groupId: "g", members: [{ memberId, groupInstanceId: null }] });
  await leaving(follower.memberId);
  await flush();
  let release = () => {};
  log.gate = new Promise<void>((resolve) => (release = resolve));
  let answered = false;
  const left = leaving(leader.memberId).then((answer) => {
    answered = true;
    return answer;
  });
  await flush();
  t.equal(describeGroups(coordinator, ["g"])[0]!.state, "Empty", "the group is empty at once");
  t.notOk(answered, "the leave waits for the empty group's record");
  log.gate = null;
  release();
  t.same((await left).members.map((m) => m.error), [null]);
  // The node crashes as soon as the leave is answered: the next coordinator reads an empty group.
  const p = offsetsPartitionOf("g", 2);
  log.epochs[p] = 1;
  const next = coordinatorOn(log, clock).coordinator;
  next.onTick(clock.nowMs());
  await flush();
  const described = describeGroups(next, ["g"])[0]!;
  t.same([described.state, described.members.length], ["Empty", 0], "no member is left to wait for");
});
