import t from "tap";
import { stepGroup } from "../../../src/groups/core/group_core.ts";
import type {
  GroupAnswer,
  GroupEffect,
  GroupEvent,
  JoinAnswer,
  JoinEvent,
} from "../../../src/groups/core/group_events.ts";
import {
  emptyGroup,
  groupDueMs,
  type GroupSettings,
  type GroupState,
} from "../../../src/groups/core/group_state.ts";
import { Rng } from "../../../src/runtime/rng.ts";

const settings: GroupSettings = {
  membersMax: 8,
  sessionTimeoutMinMs: 1_000,
  sessionTimeoutMaxMs: 60_000,
  initialRebalanceDelayMs: 3_000,
};
const bytes = (...b: number[]) => new Uint8Array(b);

/** A group driven by events, keeping every answer by request id. */
class Driver {
  state: GroupState;
  readonly answers = new Map<number, GroupAnswer>();
  persists = 0;
  #nextRequest = 1;
  constructor(public nowMs = 0, public readonly s = settings) {
    this.state = emptyGroup("g", nowMs);
  }
  step(event: GroupEvent): GroupEffect[] {
    const { state, effects } = stepGroup(this.state, event, this.nowMs, this.s);
    this.state = state;
    for (const e of effects) {
      if (e.kind === "answer") {
        if (this.answers.has(e.requestId)) throw new Error(`request ${e.requestId} answered twice`);
        this.answers.set(e.requestId, e.answer);
      } else this.persists += 1;
    }
    return effects;
  }
  at(nowMs: number): void {
    this.nowMs = nowMs;
    this.step({ kind: "tick" });
  }
  join(memberId: string, more: Partial<JoinEvent> = {}): number {
    const requestId = this.#nextRequest++;
    this.step({
      kind: "join",
      requestId,
      memberId,
      generatedMemberId: `m${requestId}`,
      groupInstanceId: null,
      clientId: "c",
      clientHost: "/127.0.0.1",
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 20_000,
      protocolType: "consumer",
      protocols: [{ name: "range", metadata: bytes(requestId) }, { name: "roundrobin", metadata: bytes(0) }],
      requireKnownMemberId: false,
      ...more,
    });
    return requestId;
  }
  sync(memberId: string, generation: number, assignments = new Map<string, Uint8Array>()): number {
    const requestId = this.#nextRequest++;
    this.step({ kind: "sync", requestId, memberId, groupInstanceId: null, generation, assignments });
    return requestId;
  }
  heartbeat(memberId: string, generation: number): GroupAnswer | undefined {
    const requestId = this.#nextRequest++;
    this.step({ kind: "heartbeat", requestId, memberId, groupInstanceId: null, generation });
    return this.answers.get(requestId);
  }
  commit(memberId: string, generation: number): GroupAnswer | undefined {
    const requestId = this.#nextRequest++;
    this.step({ kind: "commit", requestId, memberId, groupInstanceId: null, generation });
    return this.answers.get(requestId);
  }
  leave(...memberIds: string[]): GroupAnswer | undefined {
    const requestId = this.#nextRequest++;
    this.step({
      kind: "leave",
      requestId,
      members: memberIds.map((memberId) => ({ memberId, groupInstanceId: null })),
    });
    return this.answers.get(requestId);
  }
  joined(requestId: number): JoinAnswer {
    const answer = this.answers.get(requestId);
    if (answer?.kind !== "join") throw new Error(`request ${requestId} has no join answer`);
    return answer;
  }
}

/** Three members joined within the initial delay and synced: a stable generation 1. */
function stableOfThree(): { d: Driver; ids: string[]; leader: string } {
  const d = new Driver();
  const joins = [d.join(""), d.join(""), d.join("")];
  d.at(2_000);
  t.equal(d.answers.size, 0, "nobody is answered inside the initial delay");
  d.at(2_999);
  d.at(3_000);
  const answers = joins.map((r) => d.joined(r));
  const ids = answers.map((a) => a.memberId);
  const leader = answers[0]!.leaderId;
  const syncs = ids.map((id) =>
    d.sync(id, 1, id === leader ? new Map(ids.map((m, i) => [m, bytes(10 + i)])) : new Map())
  );
  t.equal(d.state.phase, "stable");
  t.same(
    syncs.map((r) => (d.answers.get(r) as { assignment: Uint8Array }).assignment),
    ids.map((_, i) => bytes(10 + i)),
  );
  return { d, ids, leader };
}

t.test("three members join within the initial delay: one generation, the leader sees every subscription", (t) => {
  const { d, ids, leader } = stableOfThree();
  t.equal(d.state.generation, 1);
  t.equal(d.state.protocol, "range");
  t.equal(leader, ids[0], "the first to join leads");
  const leaderAnswer = [...d.answers.values()].find((a) =>
    a.kind === "join" && a.memberId === leader
  ) as JoinAnswer;
  t.same(leaderAnswer.members.map((m) => m.metadata), [bytes(1), bytes(2), bytes(3)]);
  const follower = [...d.answers.values()].find((a) =>
    a.kind === "join" && a.memberId === ids[1]
  ) as JoinAnswer;
  t.same(follower.members, [], "followers are not told the members");
  t.equal(d.persists, 1, "the stable generation is written once");
  t.end();
});

t.test("the initial delay is extended per joining member, never past the first rebalance timeout", (t) => {
  const d = new Driver();
  d.join("", { rebalanceTimeoutMs: 5_000 });
  for (const now of [2_000, 4_000]) {
    d.nowMs = now;
    d.join("");
  }
  d.at(4_999);
  t.equal(d.state.phase, "preparing_rebalance");
  d.at(5_000);
  t.equal(d.state.phase, "completing_rebalance", "the limit of 5 s holds although the last join was at 4 s");
  t.equal(d.state.members.size, 3);
  t.end();
});

t.test("version 4's new member is given its id first, and that id lapses unused", (t) => {
  const d = new Driver(0, { ...settings, initialRebalanceDelayMs: 0 });
  const first = d.join("", { requireKnownMemberId: true });
  const answer = d.joined(first);
  t.equal(answer.error, "member_id_required");
  t.equal(d.state.members.size, 0);
  const second = d.join(answer.memberId, { requireKnownMemberId: true });
  t.equal(d.joined(second).error, null);
  t.equal(d.joined(second).memberId, answer.memberId);
  t.equal(d.joined(second).generation, 1);
  const lapsing = d.joined(d.join("", { requireKnownMemberId: true })).memberId;
  d.at(10_000);
  t.notOk(d.state.pendingMembers.has(lapsing), "an id given out lapses after the session timeout");
  t.equal(d.joined(d.join(lapsing)).error, "unknown_member_id");
  t.end();
});

t.test("a member joining a stable group: heartbeats say rebalance, everyone rejoins, a new generation", (t) => {
  const { d, ids, leader } = stableOfThree();
  t.same(d.heartbeat(ids[1]!, 1), { kind: "heartbeat", error: null });
  d.nowMs = 4_000;
  const fourth = d.join("");
  t.equal(d.state.phase, "preparing_rebalance");
  t.same(d.heartbeat(ids[1]!, 1), { kind: "heartbeat", error: "rebalance_in_progress" });
  t.equal(d.commit(ids[1]!, 1)?.error, null, "members may commit their last offsets while preparing");
  const rejoins = ids.map((id) => d.join(id));
  const answers = [fourth, ...rejoins].map((r) => d.joined(r));
  t.same(answers.map((a) => a.generation), [2, 2, 2, 2], "completed once the last known member rejoined");
  t.equal(answers[1]!.leaderId, leader, "the leader stays the leader");
  const stale = d.sync(ids[1]!, 1);
  t.equal(
    (d.answers.get(stale) as { error: string }).error,
    "illegal_generation",
    "the old generation's sync",
  );
  t.end();
});

t.test("stale generations, unknown members and a sync before the join get their errors", (t) => {
  const { d, ids } = stableOfThree();
  t.equal(d.heartbeat(ids[0]!, 0)?.error, "illegal_generation");
  t.equal(d.heartbeat("nobody", 1)?.error, "unknown_member_id");
  t.equal(d.commit(ids[0]!, 7)?.error, "illegal_generation");
  t.equal(d.commit("", -1)?.error, "unknown_member_id", "a standalone commit to a group in use is refused");
  const early = new Driver();
  const r = early.sync("m1", 1);
  t.equal((early.answers.get(r) as { error: string }).error, "unknown_member_id");
  t.equal(early.commit("", -1)?.error, null, "a standalone commit to an empty group is taken");
  t.equal(early.heartbeat("", 0)?.error, "unknown_member_id");
  t.end();
});

t.test("a follower's sync waits for the leader's; a rejoin during the wait answers it REBALANCE_IN_PROGRESS", (t) => {
  const d = new Driver(0, { ...settings, initialRebalanceDelayMs: 0 });
  const a = d.joined(d.join("")).memberId;
  const b = d.join("");
  t.equal(d.answers.has(b), false, "the second join waits for the rebalance its arrival started");
  t.equal(d.joined(d.join(a)).generation, 2);
  const bId = d.joined(b).memberId;
  const waiting = d.sync(bId, 2);
  t.notOk(d.answers.has(waiting), "the follower waits for the leader");
  t.equal(d.commit(bId, 2)?.error, "rebalance_in_progress");
  d.join(a, { protocols: [{ name: "roundrobin", metadata: bytes(9) }] });
  t.equal((d.answers.get(waiting) as { error: string }).error, "rebalance_in_progress");
  t.end();
});

t.test("a member whose session ends without a heartbeat is dropped and the others rebalance", (t) => {
  const { d, ids } = stableOfThree();
  d.nowMs = 9_000;
  d.heartbeat(ids[0]!, 1);
  d.heartbeat(ids[1]!, 1);
  t.equal(groupDueMs(d.state), 3_000 + 10_000, "the third member's session is the next thing due");
  d.at(13_000);
  t.equal(d.state.members.has(ids[2]!), false);
  t.equal(d.state.phase, "preparing_rebalance");
  const r = [d.join(ids[0]!), d.join(ids[1]!)];
  t.same(r.map((x) => d.joined(x).generation), [2, 2]);
  t.end();
});

t.test("a join phase ends at the rebalance timeout without the members that did not rejoin", (t) => {
  const { d, ids } = stableOfThree();
  d.nowMs = 5_000;
  const r = d.join(ids[1]!, { protocols: [{ name: "range", metadata: bytes(42) }] });
  d.nowMs = 6_000;
  d.join(ids[0]!);
  for (const now of [12_000, 22_000]) {
    d.nowMs = now;
    t.equal(
      d.heartbeat(ids[2]!, 1)?.error,
      "rebalance_in_progress",
      "heartbeats keep its session, not its place",
    );
  }
  d.at(24_999);
  t.equal(
    d.state.phase,
    "preparing_rebalance",
    "the third member's join is awaited until the rebalance timeout",
  );
  d.at(25_000);
  t.equal(d.joined(r).generation, 2);
  t.same([...d.state.members.keys()].sort(), [ids[0], ids[1]].sort());
  t.end();
});

t.test("a leader that never syncs: at the deadline the others rebalance without it", (t) => {
  const d = new Driver(0, { ...settings, initialRebalanceDelayMs: 0 });
  const a = d.joined(d.join("")).memberId;
  const b = d.join("");
  d.join(a);
  const bId = d.joined(b).memberId;
  const waiting = d.sync(bId, 2);
  d.at(20_000);
  t.equal((d.answers.get(waiting) as { error: string }).error, "rebalance_in_progress");
  t.notOk(d.state.members.has(a));
  t.end();
});

t.test("leaving: the rest rebalance; unknown members are named in the answer; the last one empties the group", (t) => {
  const { d, ids } = stableOfThree();
  const left = d.leave(ids[2]!, "ghost");
  t.same(left, {
    kind: "leave",
    error: null,
    members: [
      { memberId: ids[2], groupInstanceId: null, error: null },
      { memberId: "ghost", groupInstanceId: null, error: "unknown_member_id" },
    ],
  });
  t.equal(d.state.phase, "preparing_rebalance");
  d.leave(ids[0]!, ids[1]!);
  t.equal(d.state.phase, "empty");
  t.equal(d.state.generation, 2);
  t.equal(d.state.leaderId, null);
  t.end();
});

t.test("protocols: another type or no shared assignor is refused; the most voted shared one is chosen", (t) => {
  const { d } = stableOfThree();
  t.equal(d.joined(d.join("", { protocolType: "connect" })).error, "inconsistent_group_protocol");
  t.equal(
    d.joined(d.join("", { protocols: [{ name: "sticky", metadata: bytes() }] })).error,
    "inconsistent_group_protocol",
  );
  t.equal(d.joined(d.join("", { sessionTimeoutMs: 999 })).error, "invalid_session_timeout");
  const v = new Driver(0, { ...settings, initialRebalanceDelayMs: 0 });
  const rr = [{ name: "roundrobin", metadata: bytes() }, { name: "range", metadata: bytes() }];
  const a = v.joined(v.join("")).memberId;
  v.join("", { protocols: rr });
  v.join("", { protocols: rr });
  v.join(a);
  t.equal(v.state.protocol, "roundrobin", "two of three prefer round robin");
  t.end();
});

t.test("the group's size is bounded, pending member ids included", (t) => {
  const d = new Driver(0, { ...settings, membersMax: 2 });
  d.join("", { requireKnownMemberId: true });
  d.join("");
  t.equal(d.joined(d.join("")).error, "group_max_size_reached");
  t.end();
});

t.test("a static member's new process takes its place without a rebalance; the old id is fenced", (t) => {
  const d = new Driver(0, { ...settings, initialRebalanceDelayMs: 0 });
  const protocols = [{ name: "range", metadata: bytes(1) }];
  const first = d.joined(d.join("", { groupInstanceId: "i1", protocols })).memberId;
  d.sync(first, 1, new Map([[first, bytes(7)]]));
  t.equal(d.state.phase, "stable");
  const again = d.joined(d.join("", { groupInstanceId: "i1", protocols }));
  t.equal(again.error, null);
  t.not(again.memberId, first);
  t.equal(again.generation, 1, "no rebalance");
  const synced = d.sync(again.memberId, 1);
  t.same(
    (d.answers.get(synced) as { assignment: Uint8Array }).assignment,
    bytes(7),
    "it keeps the assignment",
  );
  const requestId = 999;
  d.step({ kind: "heartbeat", requestId, memberId: first, groupInstanceId: "i1", generation: 1 });
  t.equal((d.answers.get(requestId) as { error: string }).error, "unknown_member_id");
  d.step({
    kind: "heartbeat",
    requestId: 1000,
    memberId: again.memberId,
    groupInstanceId: "i2",
    generation: 1,
  });
  t.equal((d.answers.get(1000) as { error: string }).error, "fenced_instance_id");
  t.end();
});

t.test("random event sequences: every request is answered exactly once, the invariants hold", (t) => {
  for (let seed = 1; seed <= 200; seed++) {
    const rng = new Rng(seed);
    const d = new Driver(0, { ...settings, initialRebalanceDelayMs: rng.int(0, 2) * 1_000 });
    const issued: number[] = [];
    for (let i = 0; i < 200; i++) {
      const ids = [...d.state.members.keys(), ...d.state.pendingMembers.keys(), "stranger"];
      const id = ids[rng.int(0, ids.length - 1)]!;
      const generation = d.state.generation - rng.int(0, 1);
      switch (rng.int(0, 6)) {
        case 0:
          issued.push(d.join(rng.chance(0.5) ? "" : id, { requireKnownMemberId: rng.chance(0.5) }));
          break;
        case 1:
          issued.push(d.sync(id, generation, new Map(ids.map((m) => [m, bytes(1)]))));
          break;
        case 2:
          d.heartbeat(id, generation);
          break;
        case 3:
          d.leave(id);
          break;
        case 4:
          d.commit(id, generation);
          break;
        default:
          d.at(d.nowMs + rng.int(0, 15_000));
      }
    }
    // Long enough for every session and deadline to pass: whatever waited is answered.
    for (let k = 0; k < 10; k++) d.at(d.nowMs + 61_000);
    const unanswered = issued.filter((r) => !d.answers.has(r));
    if (unanswered.length > 0 || d.state.members.size > 0) {
      t.fail(`seed ${seed}: ${unanswered.length} unanswered, ${d.state.members.size} members left`);
      t.end();
      return;
    }
  }
  t.pass("200 seeds of 200 events");
  t.end();
});
