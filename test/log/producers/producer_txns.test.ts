import t from "tap";
import { encodeRecordBatch, readRecordBatchHeader } from "../../../src/log/batch/record_batch.ts";
import { encodeTxnMarker } from "../../../src/log/batch/txn_marker.ts";
import { ProducerStates } from "../../../src/log/producers/producer_states.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { idempotentBatch, transactionalBatch } from "../../helpers/kafka/idempotent_batch.ts";

// A partition's producers in transactions: a transactional batch opens its producer's transaction at
// its offset, a marker completes it, and the first offset of the oldest one open bounds the last
// stable offset. A marker at a newer epoch fences the producer here.
await initCrc32c();
const header = readRecordBatchHeader;
const marker = (producerId: number, epoch: number, commit: boolean, coordinatorEpoch = 0) => ({
  producerId,
  epoch,
  commit,
  coordinatorEpoch,
  timestampMs: 5,
});

t.test("transactions open at their first batch and complete at their marker; the oldest open bounds stability", (t) => {
  const states = new ProducerStates("p");
  t.equal(states.firstUnstableOffset(), null, "nothing open");
  states.record(header(transactionalBatch(1, 0, 0, 2)), 10);
  states.record(header(transactionalBatch(2, 0, 0, 1)), 12);
  states.record(header(transactionalBatch(1, 0, 2, 1)), 13);
  t.equal(states.firstUnstableOffset(), 10, "producer 1's transaction, from its first batch");
  t.same(states.recordMarker(marker(1, 0, true), 14), {
    producerId: 1,
    firstOffset: 10,
    lastOffset: 14,
    aborted: false,
  });
  t.equal(states.firstUnstableOffset(), 12, "producer 2's is the oldest open");
  t.same(states.recordMarker(marker(2, 0, false), 15), {
    producerId: 2,
    firstOffset: 12,
    lastOffset: 15,
    aborted: true,
  });
  t.equal(states.firstUnstableOffset(), null);
  t.equal(states.recordMarker(marker(2, 0, false), 16), null, "a marker with nothing open completes nothing");
  states.record(header(transactionalBatch(1, 0, 3, 1)), 17);
  t.equal(states.firstUnstableOffset(), 17, "the producer's next transaction");
  t.end();
});

t.test("a batch outside the producer's open transaction is refused INVALID_TXN_STATE", (t) => {
  const states = new ProducerStates("p");
  states.record(header(transactionalBatch(1, 0, 0, 1)), 0);
  const plan = states.plan([header(idempotentBatch(1, 0, 1, 1))], 1);
  t.ok(plan.kind === "refused" && plan.error.refusal === "invalid_txn_state", JSON.stringify(plan));
  t.match(
    plan.kind === "refused" ? plan.error.message : "",
    /outside a transaction while its transaction from offset 0/,
  );
  states.counted(plan);
  t.equal(states.counts.invalidTxnState, 1);
  t.same(states.plan([header(transactionalBatch(1, 0, 1, 1))], 1), { kind: "append" }, "inside it, appended");
  t.end();
});

t.test("a marker at a newer epoch fences the producer: its old epoch is refused, the new one starts afresh", (t) => {
  const states = new ProducerStates("p");
  states.record(header(transactionalBatch(1, 0, 0, 1)), 0);
  states.recordMarker(marker(1, 1, false), 1);
  const old = states.plan([header(transactionalBatch(1, 0, 1, 1))], 2);
  t.ok(old.kind === "refused" && old.error.refusal === "old_epoch", "the fenced producer's next batch");
  t.same(
    states.plan([header(transactionalBatch(1, 1, 0, 1))], 2),
    { kind: "append" },
    "not taken for epoch 0's",
  );
  states.recordMarker(marker(7, 3, true), 2);
  t.match(states.entry(7), { epoch: 3, batches: [] }, "a producer known by its marker alone");
  const stale = states.plan([header(idempotentBatch(7, 2, 0, 1))], 3);
  t.ok(stale.kind === "refused" && stale.error.refusal === "old_epoch");
  t.same(states.plan([header(idempotentBatch(7, 3, 4, 1))], 3), { kind: "append" }, "at any sequence");
  t.end();
});

t.test("a marker of an older coordinator than the producer's last marker is refused TRANSACTION_COORDINATOR_FENCED", (t) => {
  const states = new ProducerStates("p");
  const markerHeader = (epoch: number, coordinatorEpoch: number) =>
    header(encodeTxnMarker({ ...marker(1, epoch, true, coordinatorEpoch), timestampMs: 5 }));
  states.record(header(transactionalBatch(1, 0, 0, 1)), 0);
  states.recordMarker(marker(1, 0, true, 4), 1);
  t.equal(states.entry(1)?.coordinatorEpoch, 4, "the producer keeps its last marker's coordinator epoch");
  const stale = states.plan([markerHeader(0, 3)], 2, () => 3);
  t.ok(stale.kind === "refused" && stale.error.refusal === "coordinator_fenced", "coordinator epoch 3");
  t.match(
    stale.kind === "refused" ? stale.error.message : "",
    /coordinator epoch 3, older than its last marker's 4/,
  );
  t.same(states.plan([markerHeader(0, 4)], 2, () => 4), { kind: "append" }, "the same coordinator again");
  t.same(states.plan([markerHeader(0, 5)], 2, () => 5), { kind: "append" }, "a newer one");
  states.recordMarker(marker(1, 0, false, 2), 2);
  t.equal(states.entry(1)?.coordinatorEpoch, 4, "a replayed older marker does not lower it");
  t.equal(
    ProducerStates.restored("p", states.snapshot()).entry(1)?.coordinatorEpoch,
    4,
    "a snapshot keeps it",
  );
  states.counted(stale);
  t.equal(states.counts.coordinatorFenced, 1);
  t.end();
});

t.test("a truncation forgets a transaction it cut into; one open never expires; a snapshot keeps it", (t) => {
  const states = new ProducerStates("p");
  states.record(header(idempotentBatch(1, 0, 0, 1)), 0);
  states.record(header(transactionalBatch(1, 0, 1, 1)), 5);
  states.record(header(transactionalBatch(2, 0, 0, 1)), 8);
  t.equal(states.expire(1e15, 1), 0, "producers with a transaction open never expire");
  t.equal(ProducerStates.restored("p", states.snapshot()).firstUnstableOffset(), 5, "a snapshot keeps them");
  states.truncateFrom(6);
  t.equal(states.firstUnstableOffset(), 5, "producer 1's began below the cut");
  t.equal(states.entry(2), undefined, "producer 2's only batch was cut");
  states.truncateFrom(5);
  t.equal(states.firstUnstableOffset(), null, "cut at its first batch: gone");
  t.match(states.entry(1), { batches: [{ firstOffset: 0 }] });
  t.equal(states.expire(1e15, 1), 1, "and then it expires");
  t.end();
});

t.test("recordBatch takes any batch the log placed: a marker completes, data moves its producer on", (t) => {
  const states = new ProducerStates("p");
  const data = transactionalBatch(3, 0, 0, 2);
  t.equal(states.recordBatch(data, header(data), 20), null);
  const commit = encodeTxnMarker({
    producerId: 3,
    epoch: 0,
    commit: true,
    coordinatorEpoch: 1,
    timestampMs: 9,
  });
  t.same(states.recordBatch(commit, header(commit), 22), {
    producerId: 3,
    firstOffset: 20,
    lastOffset: 22,
    aborted: false,
  });
  t.equal(states.firstUnstableOffset(), null);
  const plain = encodeRecordBatch([{
    offsetDelta: 0,
    timestampDelta: 0,
    key: null,
    value: null,
    headers: [],
  }], {
    baseOffset: 0,
    baseTimestampMs: 0,
    maxTimestampMs: 0,
    timestampType: "create_time",
  });
  t.equal(states.recordBatch(plain, header(plain), 23), null, "a batch of no producer");
  t.equal(states.size, 1);
  t.end();
});

t.test("an abort's index entry records the last stable offset then: the oldest still open, or past its marker", (t) => {
  const states = new ProducerStates("p");
  states.record(header(transactionalBatch(1, 0, 0, 1)), 10);
  states.record(header(transactionalBatch(2, 0, 0, 1)), 11);
  const first = states.recordMarker(marker(1, 0, false), 12)!;
  t.same(states.abortedEntryOf(first), {
    producerId: 1,
    firstOffset: 10,
    lastOffset: 12,
    lastStableOffset: 11,
  });
  const second = states.recordMarker(marker(2, 0, false), 13)!;
  t.same(states.abortedEntryOf(second), {
    producerId: 2,
    firstOffset: 11,
    lastOffset: 13,
    lastStableOffset: 14,
  });
  states.record(header(transactionalBatch(1, 0, 1, 1)), 14);
  t.equal(states.abortedEntryOf(states.recordMarker(marker(1, 0, true), 15)!), null, "a commit has none");
  t.end();
});
