import t from "tap";
import {
  abortedTxnEntryBytes,
  AbortedTxnIndex,
  AbortedTxnIndexError,
} from "../../../src/log/producers/aborted_txns.ts";

// A segment's aborted-transaction index: Kafka's 34-byte entries in marker order, read back whole,
// cut with its segment, and collected for a read_committed fetch's aborted list.

const entries = [
  { producerId: 1, firstOffset: 10, lastOffset: 14, lastStableOffset: 12 },
  { producerId: 2, firstOffset: 12, lastOffset: 20, lastStableOffset: 21 },
  { producerId: 3, firstOffset: 25, lastOffset: 30, lastStableOffset: 31 },
];
const indexOf = (list = entries) => {
  const index = new AbortedTxnIndex();
  for (const e of list) index.add(e);
  return index;
};

t.test("an index reads back from its bytes, Kafka's layout", (t) => {
  const bytes = indexOf().encode();
  t.equal(bytes.length, 3 * abortedTxnEntryBytes);
  t.same([...bytes.subarray(0, 10)], [0, 0, 0, 0, 0, 0, 0, 0, 0, 1], "version 0, then producer 1");
  t.same(AbortedTxnIndex.decode(bytes, "x.txnindex").entries, entries);
  t.same(AbortedTxnIndex.decode(new Uint8Array(0), "empty").entries, []);
  const refusals: [Uint8Array, RegExp][] = [
    [bytes.subarray(0, 40), /40 bytes are not whole entries/],
    [Object.assign(bytes.slice(), { 0: 1 }), /an entry of version 256/],
    [concat(indexOf([entries[1]!]).encode(), indexOf([entries[0]!]).encode()), /out of order at byte 34/],
  ];
  for (const [bad, message] of refusals) {
    let thrown: unknown = null;
    try {
      AbortedTxnIndex.decode(bad, "bad.txnindex");
    } catch (error) {
      thrown = error;
    }
    t.ok(thrown instanceof AbortedTxnIndexError, String(message));
    t.match((thrown as Error).message, message);
  }
  t.end();
});

t.test("entries come in marker order; a cut forgets those at or past it", (t) => {
  const index = indexOf();
  t.throws(
    () => index.add({ producerId: 4, firstOffset: 1, lastOffset: 30, lastStableOffset: 31 }),
    /follows the one at 30/,
  );
  index.truncateFrom(20);
  t.same(index.entries.map((e) => e.producerId), [1]);
  t.end();
});

t.test("a fetch collects the aborts that overlap its range, and may stop where one's stable offset passes it", (t) => {
  const index = indexOf();
  const into: typeof entries = [];
  t.equal(index.collect(13, 20, into), true, "producer 2's abort completed with the stable offset at 21");
  t.same(into.map((e) => e.producerId), [1, 2], "producer 1's marker at 14 is in range; 2 began below 20");
  const later: typeof entries = [];
  t.equal(index.collect(15, 40, later), false, "none passes 40: later segments may hold more");
  t.same(later.map((e) => e.producerId), [2, 3]);
  const none: typeof entries = [];
  index.collect(31, 40, none);
  t.same(none, [], "every marker is below the fetch");
  t.end();
});

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
