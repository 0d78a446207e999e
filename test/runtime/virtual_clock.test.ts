import t from "tap";
import { AbortedError } from "../../src/runtime/wait_errors.ts";
import { VirtualClock } from "../../src/runtime/virtual_clock.ts";

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
