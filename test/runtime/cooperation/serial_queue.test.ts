import t from "tap";
import { SerialQueue } from "../../../src/runtime/cooperation/serial_queue.ts";
import { QueueFullError } from "../../../src/runtime/wait_errors.ts";

t.test("tasks run one at a time, in the order queued, a failure not stopping the next", async (t) => {
  const queue = new SerialQueue("test", 8);
  const events: string[] = [];
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const first = queue.enqueue(async () => {
    events.push("first starts");
    await held;
    events.push("first ends");
    return 1;
  });
  const second = queue.enqueue(() => {
    events.push("second runs");
    return Promise.reject(new Error("second fails"));
  });
  const third = queue.enqueue(() => {
    events.push("third runs");
    return Promise.resolve(3);
  });
  t.equal(queue.queued, 3, "three tasks are queued");
  await Promise.resolve();
  t.same(events, ["first starts"], "the second waits for the first");
  release();
  t.equal(await first, 1);
  await t.rejects(second, /second fails/);
  t.equal(await third, 3);
  await queue.settled();
  t.same(events, ["first starts", "first ends", "second runs", "third runs"]);
  t.equal(queue.queued, 0, "nothing is left queued");
});

t.test("a task past queuedMax is refused, and the queue takes tasks again once one ends", async (t) => {
  const queue = new SerialQueue("bounded", 2);
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const a = queue.enqueue(() => held);
  const b = queue.enqueue(() => Promise.resolve());
  await t.rejects(queue.enqueue(() => Promise.resolve()), QueueFullError, "the third is refused");
  release();
  await a;
  await b;
  t.equal(await queue.enqueue(() => Promise.resolve("again")), "again");
});

t.test("queuedMax must be a positive integer", (t) => {
  t.throws(() => new SerialQueue("none", 0), RangeError);
  t.end();
});
