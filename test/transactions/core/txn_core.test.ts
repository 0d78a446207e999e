import t from "tap";
import { loadTxn, stepTxn, wantsFreshProducerId } from "../../../src/transactions/core/txn_core.ts";
import type { TxnEffect, TxnEvent, TxnStep } from "../../../src/transactions/core/txn_events.ts";
import {
  producerEpochMax,
  txnPartitionKey,
  type TxnState,
} from "../../../src/transactions/core/txn_state.ts";

// The transaction coordinator's core for one transactional id, event by event, as Kafka's decides:
// no I/O, no timers; the log's appends and the markers are effects, and their ends are events.

const settings = {
  transactionMaxTimeoutMs: 900_000,
  transactionalIdExpirationMs: 7 * 86_400_000,
  partitionsPerTransactionMax: 3,
};
const p0 = txnPartitionKey("orders", 0);
const p1 = txnPartitionKey("orders", 1);

/** A driver that keeps the state and the effects of every step. */
function coordinator(start: TxnState | null = null) {
  let state = start;
  let nowMs = 1_000;
  const step = (event: TxnEvent): TxnEffect[] => {
    const next: TxnStep = stepTxn(state, event, nowMs, settings);
    state = next.state;
    return next.effects;
  };
  let requestId = 0;
  const init = (
    freshProducerId: number | null = 7,
    expected: { producerId: number; epoch: number } | null = null,
  ) =>
    step({
      kind: "init",
      requestId: ++requestId,
      transactionalId: "tx",
      timeoutMs: 60_000,
      expected,
      freshProducerId,
    });
  const at = () => ({ producerId: state!.producerId, epoch: state!.producerEpoch });
  const add = (partitions: string[], who = at()) =>
    step({ kind: "add", requestId: ++requestId, ...who, partitions });
  const end = (commit: boolean, who = at()) => step({ kind: "end", requestId: ++requestId, ...who, commit });
  return {
    get state() {
      return state!;
    },
    advance: (ms: number) => (nowMs += ms),
    step,
    init,
    add,
    end,
    appended: () => step({ kind: "appended" }),
    /** Initializes the id and opens a transaction on `partitions`, every append succeeding. */
    open: (partitions: string[]) => {
      init();
      step({ kind: "appended" });
      add(partitions);
      step({ kind: "appended" });
    },
  };
}

const answerOf = (effects: TxnEffect[]) => effects.find((e) => e.kind === "answer");

t.test("InitProducerId: a new id gets a fresh producer id at epoch 0 once the log has it; again, the next epoch", (t) => {
  const c = coordinator();
  t.ok(wantsFreshProducerId(null), "a new id takes a fresh producer id");
  const first = c.init(7);
  t.match(first, [{ kind: "append", record: { producerId: 7, producerEpoch: 0, phase: "empty" } }]);
  t.equal(answerOf(first), undefined, "no answer before the log has the record");
  t.same(answerOf(c.appended()), { kind: "answer", requestId: 1, error: "none", producerId: 7, epoch: 0 });
  c.init(null);
  t.match(answerOf(c.appended()), { error: "none", producerId: 7, epoch: 1 });
  t.notOk(wantsFreshProducerId(c.state));
  for (const timeoutMs of [0, 900_001]) {
    const e = c.step({
      kind: "init",
      requestId: 9,
      transactionalId: "tx",
      timeoutMs,
      expected: null,
      freshProducerId: null,
    });
    t.match(answerOf(e), { error: "invalid_transaction_timeout", producerId: -1 }, `timeout ${timeoutMs}`);
  }
  const empty = c.step({
    kind: "init",
    requestId: 10,
    transactionalId: "",
    timeoutMs: 1,
    expected: null,
    freshProducerId: 8,
  });
  t.match(answerOf(empty), { error: "invalid_request" });
  t.end();
});

t.test("AddPartitionsToTxn opens the transaction; a partition it holds is answered at once; the bound refuses", (t) => {
  const c = coordinator();
  c.open([p0]);
  t.match(c.state, { phase: "ongoing", partitions: [p0], startedAtMs: 1_000 });
  t.same(
    c.add([p0]),
    [{ kind: "answer", requestId: 3, error: "none", producerId: -1, epoch: -1 }],
    "no append",
  );
  c.advance(500);
  t.match(c.add([p1]), [{ kind: "append", record: { partitions: [p0, p1], startedAtMs: 1_000 } }]);
  t.match(answerOf(c.add([p0])), { error: "concurrent_transactions" }, "while an append is pending");
  c.appended();
  t.match(answerOf(c.add(["a:1", "a:2"])), { error: "too_many_partitions" });
  t.match(answerOf(c.add([p0], { producerId: 8, epoch: 0 })), { error: "invalid_producer_id_mapping" });
  t.match(answerOf(c.add([p0], { producerId: 7, epoch: 5 })), { error: "producer_fenced" });
  const unknown = stepTxn(
    null,
    { kind: "add", requestId: 1, producerId: 7, epoch: 0, partitions: [p0] },
    0,
    settings,
  );
  t.match(answerOf(unknown.effects), { error: "invalid_producer_id_mapping" });
  t.end();
});

t.test("EndTxn: answered once the decision is in the log, then the markers, then the completion", (t) => {
  const c = coordinator();
  c.open([p0, p1]);
  t.match(c.end(true), [{ kind: "append", record: { phase: "prepare_commit", partitions: [p0, p1] } }]);
  const decided = c.appended();
  t.match(decided, [
    { kind: "answer", error: "none" },
    { kind: "write_markers", producerId: 7, epoch: 0, commit: true, partitions: [p0, p1] },
  ]);
  t.match(answerOf(c.end(true)), { error: "concurrent_transactions" }, "a retry while the markers go out");
  t.match(answerOf(c.init()), { error: "concurrent_transactions" });
  t.match(c.step({ kind: "markers_written" }), [{
    kind: "append",
    record: { phase: "complete_commit", partitions: [] },
  }]);
  t.same(c.appended(), []);
  t.match(c.state, { phase: "complete_commit", pending: null });
  t.match(answerOf(c.end(true)), { error: "none" }, "a retry of the commit that completed");
  t.match(answerOf(c.end(false)), { error: "invalid_txn_state" });
  c.init();
  c.appended();
  t.match(answerOf(c.end(false)), { error: "invalid_txn_state" }, "nothing to end");
  t.end();
});

t.test("a new producer with the id fences the old one: its transaction aborts at a bumped epoch", (t) => {
  const c = coordinator();
  c.open([p0]);
  const old = { producerId: 7, epoch: 0 };
  t.match(c.init(), [{ kind: "append", record: { phase: "prepare_abort", producerEpoch: 1 } }]);
  t.match(c.appended(), [
    { kind: "answer", error: "concurrent_transactions" },
    { kind: "write_markers", epoch: 1, commit: false, partitions: [p0] },
  ]);
  c.step({ kind: "markers_written" });
  c.appended();
  t.match(answerOf(c.end(true, old)), { error: "producer_fenced" }, "the old producer's commit");
  c.init();
  t.match(
    answerOf(c.appended()),
    { error: "none", producerId: 7, epoch: 2 },
    "the new producer, past the fence",
  );
  t.end();
});

t.test("a transaction open past its timeout is aborted and its producer fenced; an idle id expires", (t) => {
  const c = coordinator();
  c.open([p0]);
  c.advance(60_000);
  t.same(c.step({ kind: "tick" }), [], "at its timeout exactly, not yet");
  c.advance(1);
  t.match(c.step({ kind: "tick" }), [
    { kind: "timed_out", producerId: 7 },
    { kind: "append", record: { phase: "prepare_abort", producerEpoch: 1 } },
  ]);
  t.match(c.appended(), [{ kind: "write_markers", commit: false }], "no request to answer");
  c.step({ kind: "markers_written" });
  c.appended();
  t.match(answerOf(c.add([p0], { producerId: 7, epoch: 0 })), { error: "producer_fenced" });
  c.advance(settings.transactionalIdExpirationMs);
  t.match(c.step({ kind: "tick" }), [{ kind: "append", transactionalId: "tx", record: null }], "a tombstone");
  const forgotten = stepTxn(c.state, { kind: "appended" }, 0, settings);
  t.same(forgotten, { state: null, effects: [{ kind: "forget", transactionalId: "tx" }] });
  t.end();
});

t.test("the log refuses an append: the request hears why; a failed fence keeps its epoch; a completion is tried again", (t) => {
  const c = coordinator();
  c.init();
  t.match(c.step({ kind: "append_failed", error: "not_coordinator" }), [
    { kind: "answer", error: "not_coordinator", producerId: -1, epoch: -1 },
  ]);
  t.match(c.state, { producerEpoch: -1, pending: null }, "nothing taken");
  c.init();
  c.appended();
  c.add([p0]);
  c.appended();
  c.init();
  c.step({ kind: "append_failed", error: "coordinator_not_available" });
  t.match(c.state, { phase: "ongoing", producerEpoch: 1, failedEpochFence: true }, "the bump holds");
  t.match(c.init(), [{ kind: "append", record: { producerEpoch: 1 } }], "no second bump");
  c.appended();
  c.step({ kind: "markers_written" });
  c.step({ kind: "append_failed", error: "coordinator_not_available" });
  t.match(c.state, { phase: "prepare_abort", pending: { kind: "markers_written" } });
  t.match(c.step({ kind: "tick" }), [{ kind: "append", record: { phase: "complete_abort" } }]);
  t.end();
});

t.test("KIP-360: a producer passing its id and epoch is bumped; a retry of the bump gets it again; others are fenced", (t) => {
  const c = coordinator();
  c.init();
  c.appended();
  t.match(answerOf((c.init(null, { producerId: 7, epoch: 0 }), c.appended())), { producerId: 7, epoch: 1 });
  t.match(c.state, { lastProducerId: 7, lastProducerEpoch: 0 });
  t.match(answerOf((c.init(null, { producerId: 7, epoch: 0 }), c.appended())), { epoch: 1 }, "a retry");
  t.match(answerOf(c.init(null, { producerId: 7, epoch: 9 })), { error: "producer_fenced" });
  t.match(answerOf(c.init(null, { producerId: 99, epoch: 1 })), { error: "producer_fenced" });
  t.end();
});

t.test("an exhausted epoch takes a fresh producer id at epoch 0", (t) => {
  const c = coordinator();
  c.init();
  c.appended();
  const exhausted = { ...c.state, producerEpoch: producerEpochMax };
  t.ok(wantsFreshProducerId(exhausted));
  const d = coordinator(exhausted);
  d.init(12);
  t.match(answerOf(d.appended()), { error: "none", producerId: 12, epoch: 0 });
  t.match(d.state, { lastProducerId: 7, lastProducerEpoch: -1 });
  t.end();
});

t.test("a coordinator that loads a decided transaction writes its markers again; an open one waits for its timeout", (t) => {
  const record = {
    transactionalId: "tx",
    producerId: 7,
    producerEpoch: 3,
    timeoutMs: 60_000,
    phase: "prepare_commit" as const,
    partitions: [p0],
    startedAtMs: 5,
    updatedAtMs: 6,
  };
  t.match(loadTxn(record), {
    state: { phase: "prepare_commit", pending: { kind: "markers" } },
    effects: [{ kind: "write_markers", producerId: 7, epoch: 3, commit: true, partitions: [p0] }],
  });
  t.match(loadTxn({ ...record, phase: "ongoing" }), { state: { pending: null }, effects: [] });
  t.end();
});
