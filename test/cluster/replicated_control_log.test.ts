import t, { type Test } from "tap";
import type { Coordinator, Txn, TxnResult } from "../../src/coordinator/coordinator.ts";
import { SimCoordinatorStore } from "../../src/coordinator/sim_coordinator.ts";
import { ClusterKeys } from "../../src/cluster/node/cluster_keys.ts";
import { decodeFloorRecord } from "../../src/cluster/floor_record.ts";
import { encodePartitionState, type PartitionState } from "../../src/cluster/controller/partition_state.ts";
import { floorSubmitAttemptsMax, ReplicatedControlLog } from "../../src/cluster/replicated_control_log.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { type ControlCommand, ControlEpochMismatchError } from "../../src/tier/control/control_log.ts";
import { virtualTime, waitFor } from "../helpers/wait_for.ts";
import { mergeReplace } from "../helpers/replace_commands.ts";

const keys = new ClusterKeys("/sim");
const address = { streamId: 1, topicId: 2, partitionId: 0 };
const label = "1/2/0";
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

const floor = (upToOffset: number, purgeGeneration = 0): ControlCommand => ({
  kind: "advance_tiered_floor",
  partition: label,
  purgeGeneration,
  upToOffset,
});

const deleted = (upToOffset: number, purgeGeneration = 0): ControlCommand => ({
  kind: "advance_deleted_up_to",
  partition: label,
  purgeGeneration,
  upToOffset,
});

const led = (leaderEpoch: number, isr = [1, 2, 3]): PartitionState => ({
  leader: 1,
  leaderEpoch,
  isr,
  replicas: [1, 2, 3],
});

async function setup(t: Test) {
  const clock = new VirtualClock();
  const store = new SimCoordinatorStore({ clock, watchLagMs: 2 });
  const admin = store.client("admin");
  const writeState = (state: PartitionState) =>
    admin.txn({
      compare: [],
      success: [{ kind: "put", key: keys.partition(address), value: encodePartitionState(state) }],
    });
  await writeState(led(4));
  const open = async (coordinator: Coordinator) => {
    const applied: Array<{ index: number; command: ControlCommand }> = [];
    const log = new ReplicatedControlLog({ coordinator, keys, clock, logger: silentLogger() });
    await log.replay((index, command) => {
      applied.push({ index, command });
      return Promise.resolve();
    });
    t.teardown(() => log.close());
    return { log, applied };
  };
  /** Lets the watches deliver: virtual time past their lag, and the promises settled. */
  const settle = async () => {
    for (let i = 0; i < 5; i++) {
      clock.advance(5);
      await flush();
    }
  };
  /** A wait on virtual time in 5 ms steps, promises settled after each: for what a replica hears. */
  const hearing = { deadlineMs: 1000, pace: virtualTime(clock, 5) };
  return { clock, store, admin, writeState, open, settle, hearing };
}

t.test("a leader's floor commits under its epoch, and every replica applies it", async (t) => {
  const { store, open, hearing, admin } = await setup(t);
  const leader = await open(store.client("node-1"));
  const follower = await open(store.client("node-2"));
  const index = await leader.log.submit(floor(100), { expectedEpoch: 4 });
  t.same(leader.applied, [{ index, command: floor(100) }], "the submitter applies it at once");
  await waitFor("the replica to hear the floor", () => follower.applied.length > 0, hearing);
  t.same(follower.applied, [{ index, command: floor(100) }], "a replica hears it through its watch");
  const stored = (await admin.range({ key: keys.floor(label) })).kvs[0]!;
  t.same(decodeFloorRecord(stored.key, stored.value), {
    purgeGeneration: 0,
    upToOffset: 100,
    deletedUpToOffset: 0,
    leaderEpoch: 4,
  });
  t.equal(follower.log.committed(), index);
  // A replica that starts later replays what is committed.
  const late = await open(store.client("node-3"));
  t.same(late.applied, [{ index, command: floor(100) }]);
});

t.test("a deposed leader's floor is refused and written nowhere", async (t) => {
  const { store, open, writeState, admin } = await setup(t);
  const old = await open(store.client("node-1"));
  await old.log.submit(floor(50), { expectedEpoch: 4 });
  await writeState({ leader: 2, leaderEpoch: 5, isr: [2, 3], replicas: [1, 2, 3] });
  const refused = await old.log.submit(floor(200), { expectedEpoch: 4 }).catch((e) => e);
  t.ok(refused instanceof ControlEpochMismatchError, String(refused));
  t.match(refused.message, /epoch 5, not 4/);
  const stored = (await admin.range({ key: keys.floor(label) })).kvs[0]!;
  t.equal(decodeFloorRecord(stored.key, stored.value).upToOffset, 50, "the floor stays where it was");
  // A partition whose state is gone (its topic deleted) refuses as a moved epoch does.
  await admin.txn({ compare: [], success: [{ kind: "delete", key: keys.partition(address) }] });
  t.ok(
    await old.log.submit(floor(300), { expectedEpoch: 4 }).catch((e) => e) instanceof
      ControlEpochMismatchError,
  );
});

t.test("floors only rise: a lower or equal one writes nothing; a new purge generation starts again", async (t) => {
  const { store, open, admin } = await setup(t);
  const { log } = await open(store.client("node-1"));
  const first = await log.submit(floor(100), { expectedEpoch: 4 });
  t.equal(await log.submit(floor(80), { expectedEpoch: 4 }), first, "lower: the committed one's index");
  t.equal(await log.submit(floor(100), { expectedEpoch: 4 }), first, "equal: the same");
  const purged = await log.submit(floor(10, 1), { expectedEpoch: 4 });
  t.ok(purged > first, "a later generation commits, even lower");
  const stored = (await admin.range({ key: keys.floor(label) })).kvs[0]!;
  t.same(decodeFloorRecord(stored.key, stored.value), {
    purgeGeneration: 1,
    upToOffset: 10,
    deletedUpToOffset: 0,
    leaderEpoch: 4,
  });
  t.equal(
    await log.submit(floor(500, 0), { expectedEpoch: 4 }),
    purged,
    "an older generation writes nothing",
  );
});

/** A coordinator that runs `beforeCompare` just before each transaction that compares. */
function racing(inner: Coordinator, beforeCompare: () => Promise<unknown>): Coordinator {
  return {
    ...inner,
    txn: async (txn: Txn): Promise<TxnResult> => {
      if (txn.compare.length > 0) await beforeCompare();
      return inner.txn(txn);
    },
    range: (r) => inner.range(r),
    watch: (r, from, listener) => inner.watch(r, from, listener),
    close: () => inner.close(),
  };
}

t.test("an in-sync change between the read and the write is raced again; endless races give up", async (t) => {
  const { store, open, writeState, admin } = await setup(t);
  let races = 1;
  const raced = racing(store.client("node-1"), async () => {
    if (races-- > 0) await writeState(led(4, [1, 2]));
  });
  const { log } = await open(raced);
  await log.submit(floor(100), { expectedEpoch: 4 });
  const stored = (await admin.range({ key: keys.floor(label) })).kvs[0]!;
  t.equal(decodeFloorRecord(stored.key, stored.value).upToOffset, 100, "committed on the second attempt");
  races = Infinity;
  const gaveUp = await log.submit(floor(200), { expectedEpoch: 4 }).catch((e) => e);
  t.match(gaveUp.message, new RegExp(`changed during each of ${floorSubmitAttemptsMax} attempts`));
  t.notOk(gaveUp instanceof ControlEpochMismatchError, "not fenced: the tier core tries it again later");
});

t.test("a replica cut off from etcd catches up on what it missed when it is back", async (t) => {
  const { store, open, settle, clock } = await setup(t);
  const leader = await open(store.client("node-1"));
  const follower = await open(store.client("node-2"));
  store.setReachable("node-2", false);
  await leader.log.submit(floor(100), { expectedEpoch: 4 });
  await leader.log.submit(floor(150), { expectedEpoch: 4 });
  await settle();
  t.same(follower.applied, [], "nothing heard while cut off");
  store.setReachable("node-2", true);
  await waitFor("the follower to catch up", () => follower.log.committed() >= leader.log.committed(), {
    deadlineMs: 5000,
    pace: virtualTime(clock, 5),
  });
  const last = follower.applied.at(-1)?.command;
  t.equal(last?.kind === "advance_tiered_floor" ? last.upToOffset : null, 150, "the latest floor, once back");
});

t.test("a floor that fails to apply on a replica is logged, and the later ones still apply", async (t) => {
  const { store, open, hearing, clock } = await setup(t);
  const leader = await open(store.client("node-1"));
  const applied: number[] = [];
  let failures = 1;
  const log = new ReplicatedControlLog({
    coordinator: store.client("node-2"),
    keys,
    clock,
    logger: silentLogger(),
  });
  t.teardown(() => log.close());
  await log.replay((_index, command) => {
    if (failures-- > 0) return Promise.reject(new Error("Cannot write the superblock: injected"));
    if (command.kind === "advance_tiered_floor") applied.push(command.upToOffset);
    return Promise.resolve();
  });
  await leader.log.submit(floor(100), { expectedEpoch: 4 });
  await waitFor("the replica to try the first floor", () => failures < 1, hearing);
  await leader.log.submit(floor(150), { expectedEpoch: 4 });
  await waitFor("the replica to apply the next floor", () => applied.length > 0, hearing);
  t.same(applied, [150], "the failed one is skipped, the next applies");
});

t.test("the deleted watermark commits beside the floor, under the epoch, and replicas apply both", async (t) => {
  const { store, open, hearing, admin } = await setup(t);
  const leader = await open(store.client("node-1"));
  const follower = await open(store.client("node-2"));
  await leader.log.submit(floor(100), { expectedEpoch: 4 });
  const index = await leader.log.submit(deleted(40), { expectedEpoch: 4 });
  const stored = (await admin.range({ key: keys.floor(label) })).kvs[0]!;
  t.same(
    decodeFloorRecord(stored.key, stored.value),
    { purgeGeneration: 0, upToOffset: 100, deletedUpToOffset: 40, leaderEpoch: 4 },
    "one record holds both; the watermark did not move the floor",
  );
  await waitFor(
    "the replica to hear the watermark",
    () => follower.applied.filter((a) => a.index === index).length >= 2,
    hearing,
  );
  t.same(follower.applied.at(-1), { index, command: deleted(40) }, "a replica hears the watermark");
  t.same(follower.applied.at(-2), { index, command: floor(100) }, "with the floor it stands beside");
  // Lower: a no-op. A deposed leader's: refused.
  await leader.log.submit(deleted(30), { expectedEpoch: 4 });
  await t.rejects(leader.log.submit(deleted(90), { expectedEpoch: 3 }), ControlEpochMismatchError);
  await leader.log.submit(floor(120), { expectedEpoch: 4 });
  const after = (await admin.range({ key: keys.floor(label) })).kvs[0]!;
  t.same(
    decodeFloorRecord(after.key, after.value),
    { purgeGeneration: 0, upToOffset: 120, deletedUpToOffset: 40, leaderEpoch: 4 },
    "a floor keeps the watermark; a lower watermark or a deposed leader's changes nothing",
  );
  // A record written before the watermark existed reads as 0.
  t.same(
    decodeFloorRecord("k", JSON.stringify({ purge_generation: 0, up_to_offset: 5, leader_epoch: 1 })),
    { purgeGeneration: 0, upToOffset: 5, deletedUpToOffset: 0, leaderEpoch: 1 },
  );
  t.throws(
    () =>
      decodeFloorRecord(
        "k",
        JSON.stringify({ purge_generation: 0, up_to_offset: 5, leader_epoch: 1, deleted_up_to_offset: -1 }),
      ),
    /wrong type/,
  );
});

const replace = (startOffset: number, endOffset: number): ControlCommand =>
  mergeReplace(label, startOffset, endOffset);

t.test("a leader's replace commits under its epoch as a key of its own; replicas hear it after the floors", async (t) => {
  const { store, open, hearing, admin, writeState } = await setup(t);
  const leader = await open(store.client("node-1"));
  const follower = await open(store.client("node-2"));
  await leader.log.submit(floor(100), { expectedEpoch: 4 });
  const index = await leader.log.submit(replace(0, 59), { expectedEpoch: 4 });
  t.same(leader.applied.at(-1), { index, command: replace(0, 59) }, "the submitter applies it at once");
  await waitFor("the replica to hear the replace", () => follower.applied.length === 2, hearing);
  t.same(follower.applied[1], { index, command: replace(0, 59) }, "a replica hears it, markers whole");
  const stored = await admin.range({ key: keys.replaces, prefix: true });
  t.same(stored.kvs.map((kv) => kv.key), [keys.replace(label, 0)]);
  t.same(keys.replaceOf(stored.kvs[0]!.key), { label, startOffset: 0 });
  // A replica that starts later replays the floors, then the replaces.
  const late = await open(store.client("node-3"));
  t.same(late.applied.map((a) => a.command.kind), ["advance_tiered_floor", "replace_remote_segments"]);
  // A deposed leader's replace is refused and written nowhere.
  await writeState({ leader: 2, leaderEpoch: 5, isr: [2, 3], replicas: [1, 2, 3] });
  const refused = await leader.log.submit(replace(60, 99), { expectedEpoch: 4 }).catch((e) => e);
  t.ok(refused instanceof ControlEpochMismatchError, String(refused));
  t.equal((await admin.range({ key: keys.replaces, prefix: true })).kvs.length, 1);
});

t.test("a replace record that is not one is logged and skipped; the others apply", async (t) => {
  const { store, open, admin } = await setup(t);
  await admin.txn({
    compare: [],
    success: [{ kind: "put", key: keys.replace(label, 0), value: '{"markers":[]}' }],
  });
  const leader = await open(store.client("node-1"));
  await leader.log.submit(replace(60, 99), { expectedEpoch: 4 });
  const late = await open(store.client("node-2"));
  t.same(late.applied.map((a) => a.command), [replace(60, 99)]);
});
