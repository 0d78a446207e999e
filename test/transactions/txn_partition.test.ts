import t from "tap";
import { TxnCoordinatedPartition } from "../../src/transactions/txn_partition.ts";
import type { TxnEffect } from "../../src/transactions/core/txn_events.ts";

// The transactional ids of one coordinated partition: each stepped as the core decides, the
// partition's bounds first, and timeouts and expiries found when they come due.

const settings = {
  transactionMaxTimeoutMs: 900_000,
  transactionalIdExpirationMs: 86_400_000,
  partitionsPerTransactionMax: 10,
  transactionalIdsMax: 2,
  openTransactionsMax: 1,
};
const answerOf = (effects: TxnEffect[]) => effects.find((e) => e.kind === "answer");

function partitionOf() {
  const p = new TxnCoordinatedPartition(3, 7, settings, new Map());
  let requestId = 0;
  const init = (id: string, nowMs = 0) => {
    const fresh = p.wantsFreshProducerId(id) ? 100 + requestId : null;
    return p.step(id, {
      kind: "init",
      requestId: ++requestId,
      transactionalId: id,
      timeoutMs: 60_000,
      expected: null,
      freshProducerId: fresh,
    }, nowMs);
  };
  const appended = (id: string, nowMs = 0) => p.step(id, { kind: "appended" }, nowMs);
  const add = (id: string, nowMs = 0) => {
    const s = p.state(id)!;
    return p.step(id, {
      kind: "add",
      requestId: ++requestId,
      producerId: s.producerId,
      epoch: s.producerEpoch,
      partitions: ["orders:0"],
    }, nowMs);
  };
  return { p, init, appended, add };
}

t.test("the bounds refuse a new id past the ids kept, and a new transaction past those open", (t) => {
  const { p, init, appended, add } = partitionOf();
  init("a");
  appended("a");
  init("b");
  appended("b");
  t.equal(p.size, 2);
  t.match(answerOf(init("c")), { error: "too_many_transactional_ids" });
  t.equal(p.state("c"), undefined, "nothing kept of it");
  add("a");
  appended("a");
  t.equal(p.openTransactions, 1);
  t.match(answerOf(add("b")), { error: "too_many_transactions" });
  t.match(answerOf(add("a")), { error: "none" }, "the open one goes on");
  const s = p.state("a")!;
  p.step(
    "a",
    { kind: "end", requestId: 50, producerId: s.producerId, epoch: s.producerEpoch, commit: true },
    0,
  );
  appended("a");
  t.equal(p.openTransactions, 1, "ending still counts");
  p.step("a", { kind: "markers_written" }, 0);
  appended("a");
  t.equal(p.openTransactions, 0);
  t.match(add("b"), [{ kind: "append" }], "now b may open one");
  t.end();
});

t.test("a tick steps only the ids whose time came: a timeout, an expiry, a completion to write again", (t) => {
  const { p, init, appended, add } = partitionOf();
  init("a");
  appended("a");
  add("a", 1_000);
  appended("a", 1_000);
  t.same(p.tick(61_000), [], "at its timeout exactly, nothing");
  t.match(p.tick(61_001), [{ kind: "timed_out" }, { kind: "append", record: { phase: "prepare_abort" } }]);
  appended("a", 61_001);
  p.step("a", { kind: "markers_written" }, 61_002);
  p.step("a", { kind: "append_failed", error: "coordinator_not_available" }, 61_002);
  t.match(p.tick(61_003), [{ kind: "append", record: { phase: "complete_abort" } }], "the completion again");
  appended("a", 61_003);
  t.same(p.tick(61_004), [], "nothing due until it expires");
  t.match(p.tick(61_003 + settings.transactionalIdExpirationMs), [{ kind: "append", record: null }]);
  t.same(appended("a"), [{ kind: "forget", transactionalId: "a" }]);
  t.equal(p.size, 0);
  t.end();
});
