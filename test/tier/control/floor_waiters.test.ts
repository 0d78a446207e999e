import t from "tap";
import { QueueFullError } from "../../../src/runtime/wait_errors.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { FloorWaiters } from "../../../src/tier/control/floor_waiters.ts";

t.test("a waiter resolves true once its partition's floor reaches the offset, else false at its timeout", async (t) => {
  const clock = new VirtualClock();
  const waiters = new FloorWaiters(clock, 10);
  const reached = waiters.wait("a", 10, 5000);
  const other = waiters.wait("b", 10, 5000);
  const timedOut = waiters.wait("a", 100, 1000);
  waiters.wake("a", 9);
  t.equal(waiters.size, 3, "below the offset: still waiting");
  waiters.wake("a", 10);
  t.equal(await reached, true);
  clock.advance(1000);
  t.equal(await timedOut, false);
  t.equal(waiters.size, 1, "b waits on; a's two are gone");
  clock.advance(5000);
  t.equal(await other, false, "another partition's floor never woke it");
  t.equal(waiters.size, 0);
});

t.test("the waiters are bounded", async (t) => {
  const clock = new VirtualClock();
  const waiters = new FloorWaiters(clock, 2);
  const pending = [waiters.wait("a", 1, 10), waiters.wait("a", 1, 10)];
  await t.rejects(
    waiters.wait("a", 1, 10),
    new QueueFullError("await the floor", 2),
    "one more is shed as a full wait queue",
  );
  waiters.wake("a", 1);
  t.same(await Promise.all(pending), [true, true]);
  const again = waiters.wait("a", 2, 10);
  clock.advance(10);
  t.equal(await again, false, "room again once they resolved");
});
