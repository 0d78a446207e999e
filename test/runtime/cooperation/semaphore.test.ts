import t from "tap";
import { AssertionError } from "../../../src/runtime/assert.ts";
import { AbortedError, QueueFullError } from "../../../src/runtime/wait_errors.ts";
import { Semaphore } from "../../../src/runtime/cooperation/semaphore.ts";

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

t.test("waiters are admitted in strict FIFO order under contention", async (t) => {
  const sem = new Semaphore({ permits: 2, waitersMax: 10, name: "test slot" });
  const held = [await sem.acquire(), await sem.acquire()];
  const order: number[] = [];
  const waiters = [0, 1, 2, 3, 4].map((i) => sem.acquire().then((p) => (order.push(i), p)));
  t.equal(sem.waiting, 5, "five callers wait");
  t.equal(sem.inUse, 2, "two permits are held");
  held[0]!.release();
  held[1]!.release();
  await flush();
  t.same(order, [0, 1], "the two oldest waiters are admitted first");
  const admitted = await Promise.all(waiters.slice(0, 2));
  for (const p of admitted) p.release();
  await flush();
  t.same(order, [0, 1, 2, 3], "then the next two, in arrival order");
  for (const p of await Promise.all(waiters.slice(2, 4))) p.release();
  (await waiters[4]!).release();
  t.same(order, [0, 1, 2, 3, 4]);
  t.equal(sem.inUse, 0, "every permit came back");
});

t.test("tryAcquire never barges ahead of queued waiters", async (t) => {
  const sem = new Semaphore({ permits: 1, waitersMax: 10, name: "test slot" });
  const first = sem.tryAcquire();
  t.ok(first, "a free permit is taken at once");
  t.equal(sem.tryAcquire(), null, "no permit is free");
  const queued = sem.acquire();
  first!.release();
  t.equal(sem.tryAcquire(), null, "the freed permit went to the queued waiter, not to tryAcquire");
  (await queued).release();
  t.ok(sem.tryAcquire(), "free again once the waiter is done");
});

t.test("a permit is released exactly once: a double release throws", async (t) => {
  const sem = new Semaphore({ permits: 1, waitersMax: 1, name: "test slot" });
  const permit = await sem.acquire();
  permit.release();
  t.throws(() => permit.release(), AssertionError, "the second release throws");
  t.equal(sem.inUse, 0, "the failed release did not free a second permit");
});

t.test("using releases at the end of scope, and tolerates an earlier explicit release", async (t) => {
  const sem = new Semaphore({ permits: 1, waitersMax: 1, name: "test slot" });
  {
    using permit = await sem.acquire();
    t.equal(sem.inUse, 1);
    t.equal(permit.released, false);
  }
  t.equal(sem.inUse, 0, "disposed at the end of the block");
  {
    using permit = await sem.acquire();
    permit.release();
  }
  t.equal(sem.inUse, 0, "disposal after an explicit release does not release twice");
});

t.test("an aborted waiter leaves the queue without taking a permit", async (t) => {
  const sem = new Semaphore({ permits: 1, waitersMax: 10, name: "test slot" });
  const held = await sem.acquire();
  const controller = new AbortController();
  const aborted = sem.acquire(controller.signal);
  const next = sem.acquire();
  controller.abort(new Error("caller gave up"));
  await t.rejects(aborted, AbortedError, "the aborted waiter is rejected");
  t.equal(sem.waiting, 1, "only the other waiter is left");
  held.release();
  const permit = await next;
  t.equal(sem.inUse, 1, "the permit went to the next waiter, none was lost");
  permit.release();
  t.equal(sem.inUse, 0);
});

t.test("an already-aborted signal is refused at once", async (t) => {
  const sem = new Semaphore({ permits: 1, waitersMax: 1, name: "test slot" });
  await t.rejects(sem.acquire(AbortSignal.abort()), AbortedError);
  t.equal(sem.inUse, 0);
});

t.test("the wait queue is bounded", async (t) => {
  const sem = new Semaphore({ permits: 1, waitersMax: 2, name: "upload slot" });
  const held = await sem.acquire();
  const a = sem.acquire();
  const b = sem.acquire();
  await t.rejects(sem.acquire(), QueueFullError, "a third waiter is refused");
  await t.rejects(sem.acquire(), /Cannot acquire upload slot: the wait queue is full \(2 waiters\)/);
  held.release();
  (await a).release();
  (await b).release();
});
