import t from "tap";
import { TxnPartitionLoad, txnPartitionOf } from "../../../src/transactions/log/txn_load.ts";
import type { TxnRecord } from "../../../src/transactions/core/txn_state.ts";

// A partition of `__transaction_state` read back: the latest record of each id wins, a tombstone
// forgets it, and an end decided before the coordinator moved has its markers written again.

const record = (transactionalId: string, phase: TxnRecord["phase"], producerEpoch = 0): TxnRecord => ({
  transactionalId,
  producerId: transactionalId.length,
  producerEpoch,
  timeoutMs: 60_000,
  phase,
  partitions: phase === "empty" ? [] : ["orders:0"],
  startedAtMs: phase === "empty" ? -1 : 5,
  updatedAtMs: 6,
});

t.test("the latest record of each id wins; a tombstone forgets it; a decided end writes its markers again", (t) => {
  const load = new TxnPartitionLoad();
  load.replayed({ transactionalId: "a", value: record("a", "empty") });
  load.replayed({ transactionalId: "a", value: record("a", "ongoing") });
  load.replayed({ transactionalId: "bb", value: record("bb", "prepare_commit", 2) });
  load.replayed({ transactionalId: "ccc", value: record("ccc", "complete_abort") });
  load.replayed({ transactionalId: "ccc", value: null });
  t.equal(load.size, 3);
  const { states, effects } = load.finish();
  t.same([...states.keys()].sort(), ["a", "bb"], "ccc expired");
  t.match(states.get("a"), { phase: "ongoing", pending: null });
  t.match(states.get("bb"), { phase: "prepare_commit", pending: { kind: "markers" } });
  t.same(effects, [{
    kind: "write_markers",
    transactionalId: "bb",
    producerId: 2,
    epoch: 2,
    commit: true,
    partitions: ["orders:0"],
  }]);
  t.throws(() => load.replayed({ transactionalId: "d", value: null }), /only while loading/);
  t.end();
});

t.test("an id's partition is a stable hash of it, within the topic's partitions", (t) => {
  const ids = Array.from({ length: 200 }, (_, i) => `tx-${i}`);
  const spread = new Set(ids.map((id) => txnPartitionOf(id, 8)));
  t.ok([...spread].every((p) => p >= 0 && p < 8), "in range");
  t.equal(spread.size, 8, "200 ids spread over all 8 partitions");
  t.equal(txnPartitionOf("orders-tx", 50), txnPartitionOf("orders-tx", 50), "the same every time");
  t.throws(() => txnPartitionOf("x", 0), /has partitions/);
  t.end();
});
