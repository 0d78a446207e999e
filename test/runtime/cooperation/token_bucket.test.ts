import t from "tap";
import { AbortedError, QueueFullError } from "../../../src/runtime/wait_errors.ts";
import { TokenBucket } from "../../../src/runtime/cooperation/token_bucket.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Steps virtual time in 1 ms increments, flushing promise callbacks between steps. */
async function advanceBy(clock: VirtualClock, ms: number): Promise<void> {
  for (let i = 0; i < ms; i++) {
    clock.advance(1);
    await flush();
  }
}

t.test("an unlimited bucket admits at once, whatever the size", async (t) => {
  const clock = new VirtualClock();
  const bucket = new TokenBucket(clock, {
    rateBytesPerSec: "unlimited",
    waitersMax: 1,
    name: "upload bandwidth",
  });
  for (let i = 0; i < 100; i++) await bucket.take(1 << 30);
  t.equal(clock.pendingTimers(), 0, "no timer was ever needed");
  t.equal(bucket.waiting, 0);
});

t.test("the burst defaults to a fifth of the rate", (t) => {
  const bucket = new TokenBucket(new VirtualClock(), { rateBytesPerSec: 1000, waitersMax: 1, name: "b" });
  t.equal(bucket.burstBytes, 200);
  t.end();
});

t.test("a request within the burst waits exactly until the bucket can cover it", async (t) => {
  const clock = new VirtualClock();
  const bucket = new TokenBucket(clock, { rateBytesPerSec: 1000, burstBytes: 100, waitersMax: 4, name: "b" });
  await bucket.take(100);
  t.equal(bucket.tokens, 0, "the burst is spent");
  let admittedAtMs = -1;
  const pending = bucket.take(50).then(() => (admittedAtMs = clock.nowMs()));
  await advanceBy(clock, 49);
  t.equal(admittedAtMs, -1, "49 tokens are not enough");
  await advanceBy(clock, 1);
  await pending;
  t.equal(admittedAtMs, 50, "admitted at 50 ms, when 50 tokens had refilled at 1000 B/s");
});

t.test("a request larger than the burst goes into debt that later refills repay", async (t) => {
  const clock = new VirtualClock();
  const bucket = new TokenBucket(clock, { rateBytesPerSec: 1000, burstBytes: 100, waitersMax: 4, name: "b" });
  await bucket.take(500);
  t.equal(bucket.tokens, -400, "admitted on credit from a full bucket: 400 bytes of debt");
  let admittedAtMs = -1;
  const next = bucket.take(10).then(() => (admittedAtMs = clock.nowMs()));
  await advanceBy(clock, 409);
  t.equal(admittedAtMs, -1, "the next request waits while the debt is repaid");
  await advanceBy(clock, 1);
  await next;
  t.equal(admittedAtMs, 410, "400 ms to repay the debt plus 10 ms for its own 10 bytes");
  t.equal(bucket.tokens, 0);
});

t.test("an oversized request waits for a full bucket, then is admitted on credit", async (t) => {
  const clock = new VirtualClock();
  const bucket = new TokenBucket(clock, { rateBytesPerSec: 1000, burstBytes: 100, waitersMax: 4, name: "b" });
  await bucket.take(60);
  let admitted = false;
  const big = bucket.take(1000).then(() => (admitted = true));
  await advanceBy(clock, 59);
  t.equal(admitted, false, "not before the bucket is full again");
  await advanceBy(clock, 1);
  await big;
  t.equal(bucket.tokens, -900);
});

t.test("waiters are admitted in FIFO order, and an aborted waiter leaves the queue", async (t) => {
  const clock = new VirtualClock();
  const bucket = new TokenBucket(clock, { rateBytesPerSec: 1000, burstBytes: 100, waitersMax: 3, name: "b" });
  await bucket.take(100);
  const order: string[] = [];
  const controller = new AbortController();
  const a = bucket.take(30).then(() => order.push("a"));
  const b = bucket.take(10, controller.signal).then(() => order.push("b"));
  const c = bucket.take(10).then(() => order.push("c"));
  await t.rejects(bucket.take(1), QueueFullError, "the queue holds at most three");
  controller.abort();
  await t.rejects(b, AbortedError);
  await advanceBy(clock, 50);
  await Promise.all([a, c]);
  t.same(order, ["a", "c"], "a first although c is smaller; b never charged");
  t.equal(Math.round(bucket.tokens), 10, "only a and c were charged: 50 refilled - 40 taken");
});
