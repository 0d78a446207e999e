import t from "tap";
import {
  entryAfter,
  entryBelow,
  judgeBatch,
  lastSequenceOf,
  producerBatchesKept,
  type ProducerEntry,
  sequenceMax,
} from "../../../src/log/producers/producer_entry.ts";
import { idempotentHeader } from "../../helpers/idempotent_header.ts";

/** The entry after batches of `counts` records from sequence 0 at epoch 0, the first at offset 100. */
function entryOf(counts: number[]): ProducerEntry {
  let entry: ProducerEntry | undefined;
  let sequence = 0;
  let offset = 100;
  for (const count of counts) {
    entry = entryAfter(entry, idempotentHeader(0, sequence, count), offset);
    sequence += count;
    offset += count;
  }
  return entry!;
}

t.test("a batch's last sequence wraps past the largest to 0", (t) => {
  t.equal(lastSequenceOf(idempotentHeader(0, 10, 5)), 14);
  t.equal(lastSequenceOf(idempotentHeader(0, sequenceMax - 1, 4)), 1);
  t.end();
});

t.test("the next batch in sequence is appended; a gap is out of order", (t) => {
  const entry = entryOf([3, 2]);
  t.same(judgeBatch(entry, idempotentHeader(0, 5, 4)), { kind: "append" });
  const gap = judgeBatch(entry, idempotentHeader(0, 6, 1));
  t.equal(gap.kind, "out_of_order");
  t.match(gap, { reason: /sequence 6 after 4/ });
  t.equal(judgeBatch(entry, idempotentHeader(0, 3, 1)).kind, "out_of_order", "a part of an earlier batch");
  t.end();
});

t.test("a retry of one of the last batches is a duplicate answered with its first offsets", (t) => {
  const entry = entryOf([3, 2, 4]);
  t.same(judgeBatch(entry, idempotentHeader(0, 3, 2)), {
    kind: "duplicate",
    batch: { firstSequence: 3, lastSequence: 4, firstOffset: 103, lastOffset: 104 },
  });
  t.same(judgeBatch(entry, idempotentHeader(0, 5, 4)), {
    kind: "duplicate",
    batch: { firstSequence: 5, lastSequence: 8, firstOffset: 105, lastOffset: 108 },
  });
  t.end();
});

t.test("only the last five batches are kept: an older retry is out of order", (t) => {
  const entry = entryOf([1, 1, 1, 1, 1, 1, 1]);
  t.equal(entry.batches.length, producerBatchesKept);
  t.same(entry.batches.map((b) => b.firstSequence), [2, 3, 4, 5, 6]);
  t.equal(judgeBatch(entry, idempotentHeader(0, 2, 1)).kind, "duplicate");
  t.equal(judgeBatch(entry, idempotentHeader(0, 1, 1)).kind, "out_of_order");
  t.end();
});

t.test("an older epoch is refused; a newer one starts at sequence 0 and forgets the old batches", (t) => {
  const bumped = entryAfter(entryOf([3]), idempotentHeader(2, 0, 1), 200);
  t.equal(judgeBatch(bumped, idempotentHeader(1, 1, 1)).kind, "old_epoch");
  t.match(judgeBatch(bumped, idempotentHeader(1, 1, 1)), {
    reason: /epoch 1 is older than the partition's 2/,
  });
  t.same(bumped.batches, [{ firstSequence: 0, lastSequence: 0, firstOffset: 200, lastOffset: 200 }]);
  t.same(judgeBatch(bumped, idempotentHeader(3, 0, 1)), { kind: "append" });
  t.equal(judgeBatch(bumped, idempotentHeader(3, 4, 1)).kind, "out_of_order", "a new epoch not at 0");
  t.end();
});

t.test("a producer the partition does not know starts at any sequence", (t) => {
  t.same(judgeBatch(undefined, idempotentHeader(5, 1234, 3)), { kind: "append" });
  t.end();
});

t.test("the sequence wraps from the largest to 0 within an epoch", (t) => {
  const entry = entryAfter(undefined, idempotentHeader(0, sequenceMax - 1, 2), 0);
  t.same(judgeBatch(entry, idempotentHeader(0, 0, 1)), { kind: "append" });
  t.end();
});

t.test("a cut forgets the batches at and above it, and a producer left with none", (t) => {
  const entry = entryOf([2, 2, 2]);
  t.equal(entryBelow(entry, 1000), entry, "nothing cut: the same entry");
  t.same(entryBelow(entry, 104)!.batches.map((b) => b.firstOffset), [100, 102]);
  t.equal(entryBelow(entry, 100), undefined);
  t.end();
});
