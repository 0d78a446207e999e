import t from "tap";
import {
  type LeaderEvent,
  type LeaderState,
  leaderStep,
  startLeading,
} from "../../../src/cluster/replication/leader_core.ts";

const settings = { replicaLagMaxMs: 10_000 };
const stored = { leader: 1, leaderEpoch: 4, isr: [1, 2, 3], replicas: [1, 2, 3] };

function run(state: LeaderState, steps: Array<[LeaderEvent, number]>) {
  const effects = [];
  for (const [event, nowMs] of steps) {
    const step = leaderStep(state, event, nowMs, settings);
    state = step.state;
    effects.push(...step.effects);
  }
  return { state, effects };
}

t.test("the high watermark is the smallest in-sync log end and waits for every follower's first fetch", (t) => {
  const start = startLeading(stored, 10, 100, 90, 0);
  const { state, effects } = run(start, [
    [{ kind: "appended", logEndOffset: 120 }, 1],
    [{ kind: "fetched", replicaId: 2, fetchOffset: 120 }, 2],
  ]);
  t.equal(state.highWatermark, 90, "follower 3 has not fetched: the watermark stays");
  t.same(effects, []);
  const after = run(state, [[{ kind: "fetched", replicaId: 3, fetchOffset: 110 }, 3]]);
  t.equal(after.state.highWatermark, 110);
  t.same(after.effects, [{ kind: "setHighWatermark", highWatermark: 110 }]);
  const back = run(after.state, [[{ kind: "fetched", replicaId: 3, fetchOffset: 95 }, 4]]);
  t.equal(back.state.highWatermark, 110, "it never goes back");
  t.end();
});

t.test("a follower not caught up for replica_lag_max leaves the in-sync set; one write at a time", (t) => {
  let { state } = run(startLeading(stored, 10, 0, 0, 0), [
    [{ kind: "fetched", replicaId: 2, fetchOffset: 0 }, 1],
    [{ kind: "fetched", replicaId: 3, fetchOffset: 0 }, 1],
    [{ kind: "appended", logEndOffset: 50 }, 2],
    [{ kind: "fetched", replicaId: 2, fetchOffset: 50 }, 3],
  ]);
  const lag = run(state, [
    [{ kind: "fetched", replicaId: 2, fetchOffset: 50 }, 10_001],
    [{ kind: "tick" }, 10_002],
    [{ kind: "tick" }, 10_003],
  ]);
  t.same(lag.effects, [{
    kind: "writeIsr",
    isr: [1, 2],
    expectedModRevision: 10,
    reason: "3 not caught up for over 10000 ms",
  }], "follower 2 keeps up; 3 was last caught up at 1 ms");
  state = lag.state;
  const heard = run(state, [[
    { kind: "stored", state: { ...stored, isr: [1, 2] }, modRevision: 11 },
    10_004,
  ]]);
  t.equal(heard.state.highWatermark, 50, "without 3 the watermark is the others' log end");
  t.same(heard.effects, [{ kind: "setHighWatermark", highWatermark: 50 }]);
  const rejoin = run(heard.state, [[{ kind: "fetched", replicaId: 3, fetchOffset: 50 }, 10_010]]);
  t.same(rejoin.effects, [{
    kind: "writeIsr",
    isr: [1, 2, 3],
    expectedModRevision: 11,
    reason: "3 caught up to the high watermark",
  }]);
  const failed = run(rejoin.state, [[{ kind: "isrWriteFailed" }, 10_011]]);
  t.same(failed.effects, [], "a failed rejoin waits for the follower's next fetch");
  const retried = run(failed.state, [[{ kind: "fetched", replicaId: 3, fetchOffset: 50 }, 10_012]]);
  t.equal(retried.effects.length, 1, "which decides it again");
  t.end();
});

t.test("the leader alone in sync: the watermark follows its own log end", (t) => {
  const alone = startLeading({ ...stored, isr: [1] }, 5, 7, 7, 0);
  const { state } = run(alone, [[{ kind: "appended", logEndOffset: 9 }, 1]]);
  t.equal(state.highWatermark, 9);
  t.end();
});

t.test("fetches of a replica that is not assigned are ignored; a stale stored state is ignored", (t) => {
  const start = startLeading(stored, 10, 5, 0, 0);
  t.same(leaderStep(start, { kind: "fetched", replicaId: 9, fetchOffset: 5 }, 1, settings).state, start);
  const stale = leaderStep(
    start,
    { kind: "stored", state: { ...stored, isr: [1] }, modRevision: 9 },
    1,
    settings,
  );
  t.same(stale.state.stored.isr, [1, 2, 3]);
  t.end();
});

t.test("a follower the controller removed is not let back in on its old progress, only on a new fetch", (t) => {
  let { state } = run(startLeading(stored, 10, 0, 0, 0), [
    [{ kind: "fetched", replicaId: 2, fetchOffset: 0 }, 1],
    [{ kind: "fetched", replicaId: 3, fetchOffset: 0 }, 1],
  ]);
  // Node 3 died; the controller took it out of the in-sync set.
  const removed = run(state, [[{ kind: "stored", state: { ...stored, isr: [1, 2] }, modRevision: 11 }, 2]]);
  t.same(removed.effects, [], "no write puts it back");
  state = run(removed.state, [[{ kind: "tick" }, 3], [{ kind: "appended", logEndOffset: 5 }, 4]]).state;
  t.same(state.stored.isr, [1, 2]);
  const back = run(state, [[{ kind: "fetched", replicaId: 3, fetchOffset: 5 }, 5]]);
  t.same(back.effects.map((e) => e.kind), ["writeIsr"], "its own fetch brings it back");
  t.end();
});

t.test("below min_insync_replicas the watermark stays, so the replicas that left hold everything below it", (t) => {
  const alone = { ...stored, isr: [1], eligible: [2, 3] };
  const strict = { replicaLagMaxMs: 10_000, minInsyncReplicas: 2 };
  const start = startLeading(alone, 10, 100, 100, 0);
  const appended = leaderStep(start, { kind: "appended", logEndOffset: 130 }, 1, strict);
  t.equal(appended.state.highWatermark, 100, "one in sync of a minimum of two: nothing more is committed");
  t.same(appended.effects, []);
  const loose = leaderStep(start, { kind: "appended", logEndOffset: 130 }, 1, { replicaLagMaxMs: 10_000 });
  t.equal(loose.state.highWatermark, 130, "with a minimum of one the leader alone commits");
  const single = startLeading({ leader: 1, leaderEpoch: 0, isr: [1], replicas: [1] }, 10, 0, 0, 0);
  const one = leaderStep(single, { kind: "appended", logEndOffset: 5 }, 1, strict);
  t.equal(one.state.highWatermark, 5, "a partition of one replica needs only itself");
  t.end();
});
