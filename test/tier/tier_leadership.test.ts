import t from "tap";
import {
  type ApplyHook,
  type ControlCommand,
  ControlEpochMismatchError,
  type ControlLog,
  type SubmitPrecondition,
} from "../../src/tier/control/control_log.ts";
import { type TierLeadership, uploadTermChange } from "../../src/tier/tier_leadership.ts";
import { tierHarness as setup } from "../helpers/tier_harness.ts";
import { passTime, waitFor } from "../helpers/wait_for.ts";

t.test("a term closes and opens only when the epoch this node leads under changes", (t) => {
  t.same(uploadTermChange(undefined, null), { close: false, open: null }, "not led, and still not");
  t.same(uploadTermChange(undefined, 3), { close: false, open: 3 }, "starts to lead");
  t.same(uploadTermChange(3, 3), { close: false, open: null }, "leads on");
  t.same(uploadTermChange(3, 4), { close: true, open: 4 }, "leads again under a later epoch");
  t.same(uploadTermChange(3, null), { close: true, open: null }, "stops leading");
  t.end();
});

/** Leadership a test sets: the epoch this node leads the partition under, or null. */
class SetLeadership implements TierLeadership {
  epoch: number | null = null;
  readonly #listeners: Array<(key: string) => void> = [];
  epochOf(): number | null {
    return this.epoch;
  }
  onChange(listener: (key: string) => void): void {
    this.#listeners.push(listener);
  }
  set(epoch: number | null): void {
    this.epoch = epoch;
    for (const listener of this.#listeners) listener("1/1/0");
  }
}

/** In front of the local log: commits only under the partition's current epoch, as etcd's compare does. */
class PartitionEpochLog implements ControlLog {
  readonly #inner: ControlLog;
  partitionEpoch = 0;
  readonly submittedUnder: number[] = [];
  constructor(inner: ControlLog) {
    this.#inner = inner;
  }
  epoch(): number {
    return this.#inner.epoch();
  }
  replay(apply: ApplyHook): Promise<void> {
    return this.#inner.replay(apply);
  }
  submit(command: ControlCommand, precondition: SubmitPrecondition): Promise<number> {
    this.submittedUnder.push(precondition.expectedEpoch);
    if (precondition.expectedEpoch !== this.partitionEpoch) {
      return Promise.reject(new ControlEpochMismatchError(precondition.expectedEpoch, this.partitionEpoch));
    }
    return this.#inner.submit(command, { expectedEpoch: this.#inner.epoch() });
  }
  committed(): number {
    return this.#inner.committed();
  }
  snapshot(index: number): Promise<void> {
    return this.#inner.snapshot(index);
  }
  close(): Promise<void> {
    return this.#inner.close();
  }
}

t.test("only the leader uploads, and its floor commands carry the epoch it leads under", async (t) => {
  const leadership = new SetLeadership();
  let log: PartitionEpochLog | null = null;
  const { partition, sim, tier, produce, ticks, lastSealedEnd } = await setup(
    t,
    { ageMs: null, sizeBytes: null },
    { leadership, controlLog: (local) => (log = new PartitionEpochLog(local)) },
  );
  await produce(20);
  await passTime(10_000, ticks().pace);
  t.equal(tier.uploadsInFlight(), 0, "a follower uploads nothing");
  t.equal(sim.keys().length, 0, "nothing in the store");
  t.equal(partition.superblock.tieredUpToOffset, 0);

  log!.partitionEpoch = 5;
  leadership.set(5);
  await waitFor(
    "the floor to catch up under epoch 5",
    () => partition.superblock.tieredUpToOffset === lastSealedEnd() + 1,
    ticks(),
  );
  t.ok(log!.submittedUnder.length > 0 && log!.submittedUnder.every((e) => e === 5), "every command under 5");

  // Another node leads now: this one stops, and what it had under way is no longer its to commit.
  leadership.set(null);
  const floor = partition.superblock.tieredUpToOffset;
  const objects = sim.keys().length;
  await produce(20);
  await passTime(10_000, ticks().pace);
  t.equal(partition.superblock.tieredUpToOffset, floor, "no floor moves from a node that stopped leading");
  t.equal(sim.keys().length, objects, "and it uploads nothing more");
  t.equal(tier.state.partitions.has("1/1/0"), false, "the core holds nothing of the partition");
});

t.test("a deposed leader's commands are refused by the epoch and not retried", async (t) => {
  const leadership = new SetLeadership();
  let log: PartitionEpochLog | null = null;
  const { partition, tier, produce, ticks } = await setup(
    t,
    { ageMs: null, sizeBytes: null },
    { leadership, controlLog: (local) => (log = new PartitionEpochLog(local)) },
  );
  // The node believes it leads under 5, but etcd already holds epoch 6.
  log!.partitionEpoch = 6;
  leadership.set(5);
  await produce(20);
  await waitFor(
    "the commands under epochs 4 and 5 and every upload to end",
    () =>
      log!.submittedUnder.length >= 2 && tier.uploadsInFlight() === 0 &&
      tier.state.partitions.get("1/1/0")!.pending.length === 0,
    ticks(),
  );
  t.equal(partition.superblock.tieredUpToOffset, 0, "none committed");
  t.equal(tier.floorRetriesWaiting(), 0, "none waits to be retried");
});

t.test("a follower applies a committed floor beyond its log's end once its log reaches it", async (t) => {
  const leadership = new SetLeadership();
  let log: PartitionEpochLog | null = null;
  const { partition, produce, ticks } = await setup(
    t,
    { ageMs: null, sizeBytes: null },
    { leadership, controlLog: (local) => (log = new PartitionEpochLog(local)) },
  );
  await produce(5);
  // The leader committed a floor of 12 while this follower holds offsets 0 to 4 only.
  const floor = (upToOffset: number): ControlCommand => ({
    kind: "advance_tiered_floor",
    partition: "1/1/0",
    purgeGeneration: 0,
    upToOffset,
  });
  await log!.submit(floor(9), { expectedEpoch: 0 });
  await log!.submit(floor(12), { expectedEpoch: 0 });
  await passTime(1_000, ticks().pace);
  t.equal(partition.superblock.tieredUpToOffset, 0, "not applied beyond the log's end");
  await produce(5);
  await passTime(1_000, ticks().pace);
  t.equal(partition.superblock.tieredUpToOffset, 0, "the latest one waits, not the earlier one");
  await produce(5);
  await waitFor(
    "the floor to be applied once the log reached it",
    () => partition.superblock.tieredUpToOffset === 12,
    ticks(),
  );
});

t.test("a follower applies a floor only below its high watermark: records above it may yet be cut", async (t) => {
  const leadership = new SetLeadership();
  let log: PartitionEpochLog | null = null;
  const { partition, produce, ticks } = await setup(
    t,
    { ageMs: null, sizeBytes: null },
    { leadership, controlLog: (local) => (log = new PartitionEpochLog(local)) },
  );
  await produce(12);
  // Twelve records, but only four held by the leader this follower now follows.
  partition.log.setReplication({ leaderEpoch: -1, following: true, highWatermark: 4 });
  await log!.submit({ kind: "advance_tiered_floor", partition: "1/1/0", purgeGeneration: 0, upToOffset: 8 }, {
    expectedEpoch: 0,
  });
  await passTime(1_000, ticks().pace);
  t.equal(partition.superblock.tieredUpToOffset, 0, "not applied above the high watermark");
  partition.log.setHighWatermark(8);
  await waitFor(
    "the floor to be applied once the watermark reached it",
    () => partition.superblock.tieredUpToOffset === 8,
    ticks(),
  );
});
