import t from "tap";
import { pack } from "msgpackr";
import {
  decodeTxnRecord,
  encodeTxnRecord,
  TxnRecordError,
} from "../../../src/transactions/log/txn_records.ts";

// A transactional id's record in `__transaction_state` reads back as written; a tombstone as one;
// anything else is refused by name, so that a coordinator never loads a state it cannot trust.

const value = {
  transactionalId: "orders-tx",
  producerId: 4001,
  producerEpoch: 7,
  timeoutMs: 60_000,
  phase: "ongoing" as const,
  partitions: ["orders:0", "__consumer_offsets:3"],
  startedAtMs: 1_700_000_000_000,
  updatedAtMs: 1_700_000_000_500,
};

t.test("a state and a tombstone read back as written", (t) => {
  const { key, value: bytes } = encodeTxnRecord({ transactionalId: "orders-tx", value });
  t.same(decodeTxnRecord(key, bytes), { transactionalId: "orders-tx", value });
  const tombstone = encodeTxnRecord({ transactionalId: "orders-tx", value: null });
  t.equal(tombstone.value, null);
  t.same(decodeTxnRecord(tombstone.key, null), { transactionalId: "orders-tx", value: null });
  t.end();
});

t.test("a key or value of another version, kind or shape is refused", (t) => {
  const { key, value: bytes } = encodeTxnRecord({ transactionalId: "orders-tx", value });
  const bad: [Uint8Array | null, Uint8Array | null, RegExp][] = [
    [null, bytes, /it has no key/],
    [pack([2, "t", "x"]), bytes, /no known version or kind/],
    [pack([1, "o", "x"]), bytes, /no known version or kind/],
    [new Uint8Array([0x92, 0x01]), bytes, /record's key: it is not msgpack/],
    [pack("text"), bytes, /record's key: not an array/],
    [key, pack([2, 1, 2, 3, "ongoing", [], 0, 0]), /value is of an unknown version/],
    [key, pack([1, 1, 2, 3, "paused", [], 0, 0]), /no phase paused/],
    [key, pack([1, 1, 2, 3, "ongoing", [5], 0, 0]), /partitions are not names/],
    [key, pack([1, 1.5, 2, 3, "ongoing", [], 0, 0]), /producer id is not an integer/],
  ];
  for (const [k, v, message] of bad) {
    let thrown: unknown = null;
    try {
      decodeTxnRecord(k, v);
    } catch (error) {
      thrown = error;
    }
    t.ok(thrown instanceof TxnRecordError, `refused: ${message}`);
    t.match((thrown as Error).message, message);
  }
  t.end();
});
