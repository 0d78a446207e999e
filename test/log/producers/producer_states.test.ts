import t from "tap";
import { ProducerRefusedError } from "../../../src/log/log_errors.ts";
import { ProducerStates } from "../../../src/log/producers/producer_states.ts";
import { idempotentHeader } from "../../helpers/idempotent_header.ts";

const plain = { ...idempotentHeader(0, 0, 3), producerId: -1, producerEpoch: -1, baseSequence: -1 };
const of = (producerId: number, epoch: number, first: number, count: number, timestampMs = 1000) => ({
  ...idempotentHeader(epoch, first, count, timestampMs),
  producerId,
});

t.test("a produce's batches are judged together, each after those before it, and nothing changes", (t) => {
  const states = new ProducerStates("t/0");
  t.same(states.plan([of(1, 0, 0, 2), plain, of(1, 0, 2, 1)], 50), { kind: "append" });
  t.equal(states.size, 0, "planning records nothing");
  const gap = states.plan([of(1, 0, 0, 2), of(1, 0, 3, 1)], 50);
  t.equal(gap.kind, "refused");
  t.ok(
    gap.kind === "refused" && gap.error instanceof ProducerRefusedError &&
      gap.error.refusal === "out_of_order",
  );
  t.end();
});

t.test("recorded batches make a retry a duplicate, with the offsets of the first append", (t) => {
  const states = new ProducerStates("t/0");
  states.record(plain, 0);
  states.record(of(1, 0, 0, 2), 3);
  states.record(of(2, 0, 0, 1), 5);
  states.record(of(1, 0, 2, 4), 6);
  t.equal(states.size, 2, "batches without a producer id have no part");
  t.same(states.plan([of(1, 0, 0, 2)], 10), { kind: "duplicate", firstOffset: 3, lastOffset: 4 });
  t.same(states.plan([of(1, 0, 2, 4)], 10), { kind: "duplicate", firstOffset: 6, lastOffset: 9 });
  t.same(states.plan([of(1, 0, 6, 1)], 10), { kind: "append" });
  const old = states.plan([of(2, 0, 1, 1), of(1, 0, 6, 1)], 10);
  t.same(old, { kind: "append" }, "producer 2 goes on at 1");
  t.end();
});

t.test("past the bound a new producer is refused; a known one goes on", (t) => {
  const states = new ProducerStates("t/0", 2);
  states.record(of(1, 0, 0, 1), 0);
  t.same(states.plan([of(1, 0, 1, 1), of(2, 0, 0, 1)], 1), { kind: "append" });
  const refused = states.plan([of(2, 0, 0, 1), of(3, 0, 0, 1)], 1);
  t.ok(refused.kind === "refused" && refused.error.refusal === "too_many_producers");
  t.match(refused.kind === "refused" ? refused.error.message : "", /2 producers, its bound; producer 3/);
  t.end();
});

t.test("idle producers expire by their last batch's timestamp", (t) => {
  const states = new ProducerStates("t/0");
  states.record(of(1, 0, 0, 1, 1_000), 0);
  states.record(of(2, 0, 0, 1, 5_000), 1);
  t.equal(states.expire(6_000, 5_000), 1);
  t.same(states.snapshot().map((e) => e.producerId), [2]);
  t.same(states.plan([of(1, 0, 40, 1)], 2), { kind: "append" }, "an expired producer starts anywhere");
  t.end();
});

t.test("a truncation forgets the batches it cut", (t) => {
  const states = new ProducerStates("t/0");
  states.record(of(1, 0, 0, 1), 0);
  states.record(of(1, 0, 1, 1), 1);
  states.record(of(2, 0, 0, 1), 2);
  states.truncateFrom(1);
  t.equal(states.size, 1);
  t.same(states.plan([of(1, 0, 1, 1)], 1), { kind: "append" }, "the cut batch is no duplicate");
  t.end();
});
