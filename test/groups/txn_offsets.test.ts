import t from "tap";
import { NotLeaderError } from "../../src/broker/broker_errors.ts";
import { offsetsPartitionOf } from "../../src/groups/group_coordinator.ts";
import { fetchOffsets, type OffsetToCommit } from "../../src/groups/core/group_offsets.ts";
import { endTxnOffsets, txnCommitOffsets } from "../../src/groups/core/txn_offsets.ts";
import {
  decodeOffsetsRecord,
  encodeOffsetsRecord,
  type OffsetsRecord,
} from "../../src/groups/offsets/offsets_records.ts";
import { coordinatorOn, flush, loaded } from "../helpers/group_coordinator_fixture.ts";

// Offsets committed in a transaction (TxnOffsetCommit) are pending until the transaction's marker
// reaches the group's partition of __consumer_offsets: a commit makes them the group's committed
// offsets, an abort drops them; both survive a new coordinator's load of the partition.

const offset = (partition: number, value: number): OffsetToCommit => ({
  topic: "orders",
  partition,
  offset: value,
  leaderEpoch: -1,
  metadata: null,
});

const commit = (producerId: number, epoch: number, offsets: OffsetToCommit[], groupId = "g") => ({
  groupId,
  producerId,
  epoch,
  memberId: "",
  groupInstanceId: null,
  generation: -1,
  offsets,
});

const committed = (coordinator: Parameters<typeof fetchOffsets>[0], groupId = "g") =>
  fetchOffsets(coordinator, groupId, [{ topic: "orders", partitions: [0, 1] }]).topics[0]!.partitions.map((
    p,
  ) => p.offset);

t.test("pending offsets become the group's at a commit marker, and are dropped at an abort", async (t) => {
  const { coordinator } = await loaded();
  const index = offsetsPartitionOf("g", 2);
  const stored = await txnCommitOffsets(coordinator, commit(9, 0, [offset(0, 5), offset(1, 6)]));
  t.same(stored.map((r) => r.error), [null, null]);
  t.same(committed(coordinator), [-1, -1], "pending, not committed yet");
  const stable = () =>
    fetchOffsets(coordinator, "g", [{ topic: "orders", partitions: [0, 2] }], true).topics[0]!.partitions.map(
      (p) => p.error,
    );
  t.same(stable(), ["unstable_offset_commit", null], "a stable read waits for the pending partition only");
  await endTxnOffsets(coordinator, index, { producerId: 9, epoch: 0, commit: true });
  t.same(committed(coordinator), [5, 6], "committed by the marker");
  t.same(stable(), [null, null], "stable once the transaction ended");
  await txnCommitOffsets(coordinator, commit(9, 1, [offset(0, 8)]));
  await endTxnOffsets(coordinator, index, { producerId: 9, epoch: 1, commit: false });
  t.same(committed(coordinator), [5, 6], "an abort drops them");
  await endTxnOffsets(coordinator, index, { producerId: 4, epoch: 0, commit: true });
  t.same(committed(coordinator), [5, 6], "a marker of a producer with nothing pending changes nothing");
});

t.test("an older epoch than the pending offsets' is INVALID_PRODUCER_EPOCH; bad partitions are refused one by one", async (t) => {
  const { coordinator } = await loaded();
  await txnCommitOffsets(coordinator, commit(9, 3, [offset(0, 5)]));
  const old = await txnCommitOffsets(coordinator, commit(9, 2, [offset(0, 7)]));
  t.same(old.map((r) => r.error), ["invalid_producer_epoch"]);
  const mixed = await txnCommitOffsets(coordinator, commit(9, 3, [offset(1, 1), { ...offset(9, 1) }]));
  t.same(mixed.map((r) => r.error), [null, "unknown_topic_or_partition"]);
  const member = await txnCommitOffsets(coordinator, {
    ...commit(9, 3, [offset(0, 1)], "nobody"),
    generation: 2,
  });
  t.same(member.map((r) => r.error), ["illegal_generation"], "a member of a group that does not exist");
});

t.test("a new coordinator reads pending offsets back, and their transaction's end applies to them", async (t) => {
  const { coordinator, log, clock } = await loaded();
  const index = offsetsPartitionOf("g", 2);
  await txnCommitOffsets(coordinator, commit(9, 0, [offset(0, 5)]));
  await txnCommitOffsets(coordinator, commit(11, 0, [offset(1, 2)]));
  await endTxnOffsets(coordinator, index, { producerId: 11, epoch: 0, commit: true });
  await flush();
  log.epochs[index] = 1;
  const next = coordinatorOn(log, clock).coordinator;
  await t.rejects(
    endTxnOffsets(next, index, { producerId: 9, epoch: 0, commit: true }),
    /load_in_progress/,
    "not loaded yet: the marker is written again later",
  );
  next.onTick(clock.nowMs());
  await flush();
  t.same(committed(next), [-1, 2], "producer 11's committed, producer 9's still pending");
  await endTxnOffsets(next, index, { producerId: 9, epoch: 0, commit: true });
  t.same(committed(next), [5, 2]);
  log.epochs[index] = null;
  await t.rejects(
    endTxnOffsets(next, index, { producerId: 9, epoch: 0, commit: true }),
    NotLeaderError,
    "another node leads the partition",
  );
});

t.test("a checkpoint keeps the pending offsets", async (t) => {
  const { coordinator, log, clock } = await loaded(undefined, 64);
  const index = offsetsPartitionOf("g", 2);
  for (let epoch = 0; epoch < 6; epoch++) {
    await txnCommitOffsets(coordinator, commit(9, epoch, [offset(0, epoch)]));
  }
  await flush();
  t.ok(log.trims.length > 0, "the partition was checkpointed");
  log.epochs[index] = 1;
  const next = coordinatorOn(log, clock).coordinator;
  next.onTick(clock.nowMs());
  await flush();
  await endTxnOffsets(next, index, { producerId: 9, epoch: 5, commit: true });
  t.same(committed(next), [5, -1], "the newest epoch's pending offset survived the checkpoint");
});

t.test("transactional offsets and ends are read back as they were written", (t) => {
  const records: OffsetsRecord[] = [
    {
      kind: "txn_offset",
      producerId: 9,
      epoch: 2,
      groupId: "g",
      topic: "orders",
      partition: 1,
      value: { offset: 5, leaderEpoch: 3, metadata: "m", commitTimestampMs: 1000 },
    },
    { kind: "txn_end", producerId: 9, epoch: 2, commit: false },
  ];
  for (const record of records) {
    const { key, value } = encodeOffsetsRecord(record);
    t.same(decodeOffsetsRecord(key, value), record, record.kind);
  }
  const { key } = encodeOffsetsRecord(records[1]!);
  t.throws(() => decodeOffsetsRecord(key, null), /transaction's end/, "an end needs its value");
  t.end();
});
