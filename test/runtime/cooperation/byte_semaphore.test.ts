import t from "tap";
import { ByteSemaphore } from "../../../src/runtime/cooperation/semaphore.ts";

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

t.test("a request larger than the whole capacity is admitted when first in line and nothing is held", async (t) => {
  const sem = new ByteSemaphore({ capacityBytes: 100, waitersMax: 10, name: "cache space" });
  const small = await sem.acquire(10);
  let bigAdmitted = false;
  const big = sem.acquire(250).then((p) => ((bigAdmitted = true), p));
  await flush();
  t.equal(bigAdmitted, false, "not while another reservation is held");
  small.release();
  const permit = await big;
  t.equal(bigAdmitted, true, "admitted once nothing else is held: no deadlock");
  t.equal(sem.inUseBytes, 250, "its full size is accounted");
  t.equal(sem.tryAcquire(1), null, "nothing else fits while it is held");
  permit.release();
  t.equal(sem.inUseBytes, 0);
});

t.test("a large head is not overtaken by smaller requests that would fit", async (t) => {
  const sem = new ByteSemaphore({ capacityBytes: 100, waitersMax: 10, name: "cache space" });
  const held = await sem.acquire(60);
  const order: string[] = [];
  const big = sem.acquire(80).then((p) => (order.push("big"), p));
  const small = sem.acquire(10).then((p) => (order.push("small"), p));
  await flush();
  t.same(order, [], "the small request waits behind the big one although 40 bytes are free");
  t.equal(sem.waitingBytes, 90);
  held.release();
  const bigPermit = await big;
  const smallPermit = await small;
  t.same(order, ["big", "small"], "admitted in arrival order");
  bigPermit.release();
  smallPermit.release();
});

t.test("aborting a blocking head lets the waiters behind it in", async (t) => {
  const sem = new ByteSemaphore({ capacityBytes: 100, waitersMax: 10, name: "cache space" });
  const held = await sem.acquire(50);
  const controller = new AbortController();
  const big = sem.acquire(90, controller.signal);
  const small = sem.acquire(40);
  controller.abort();
  await t.rejects(big);
  const permit = await small;
  t.equal(sem.inUseBytes, 90, "the small request fit next to the held 50 bytes");
  permit.release();
  held.release();
});
