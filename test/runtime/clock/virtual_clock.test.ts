import t from "tap";
import { AbortedError } from "../../../src/runtime/wait_errors.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";

t.test("timers fire in due order, ties in creation order, each seeing its own due time", (t) => {
  const clock = new VirtualClock();
  const seen: string[] = [];
  clock.schedule(20, () => seen.push(`b@${clock.nowMs()}`));
  clock.schedule(10, () => seen.push(`a@${clock.nowMs()}`));
  clock.schedule(20, () => seen.push(`c@${clock.nowMs()}`));
  clock.advance(15);
  t.same(seen, ["a@10"]);
  t.equal(clock.nowMs(), 15);
  clock.advance(5);
  t.same(seen, ["a@10", "b@20", "c@20"]);
  t.end();
});

t.test("a timer scheduled by a timer fires within the same advance if due", (t) => {
  const clock = new VirtualClock();
  const seen: number[] = [];
  clock.schedule(5, () => clock.schedule(5, () => seen.push(clock.nowMs())));
  clock.advance(10);
  t.same(seen, [10]);
  t.end();
});

t.test("cancelled timers never fire; stall moves time without firing", (t) => {
  const clock = new VirtualClock();
  let fired = 0;
  const cancel = clock.schedule(5, () => fired++);
  cancel();
  clock.schedule(5, () => fired++);
  clock.stall(100);
  t.equal(fired, 0, "stall fired nothing");
  t.equal(clock.nextDueMs(), 5);
  clock.advance(0);
  t.equal(fired, 1, "the overdue timer fires on the next advance");
  t.equal(clock.nowMs(), 100);
  t.equal(clock.nowUs(), 100_000);
  t.end();
});

t.test("sleep resolves at its time and rejects when aborted", async (t) => {
  const clock = new VirtualClock();
  const done = clock.sleep(30);
  clock.advance(30);
  await done;
  const controller = new AbortController();
  const aborted = clock.sleep(30, controller.signal);
  controller.abort();
  await t.rejects(aborted, AbortedError);
  t.equal(clock.pendingTimers(), 0, "the aborted sleep left no timer behind");
});

t.test("every repeats an interval after each call started; a late call moves the rest; cancel stops it", (t) => {
  const clock = new VirtualClock();
  const firedAt: number[] = [];
  const cancel = clock.every(10, () => firedAt.push(clock.nowMs()));
  clock.advance(30);
  t.same(firedAt, [10, 20, 30]);
  clock.stall(25);
  clock.advance(0);
  t.same(firedAt, [10, 20, 30, 55], "the call due at 40 fires at 55, and those due at 50 are not made up");
  clock.advance(10);
  t.same(firedAt, [10, 20, 30, 55, 65], "the next is due an interval after the late one");
  cancel();
  clock.advance(100);
  t.equal(firedAt.length, 5, "nothing fires after cancel");
  t.equal(clock.pendingTimers(), 0, "and no timer is left");
  let calls = 0;
  const stopInside: { cancel: () => void } = { cancel: () => {} };
  stopInside.cancel = clock.every(5, () => {
    calls++;
    stopInside.cancel();
  });
  clock.advance(50);
  t.equal(calls, 1, "a callback that cancels its own timer is the last call");
  t.throws(() => clock.every(0, () => {}), /interval must be positive/);
  t.end();
});
