import t from "tap";
import { Rng } from "../../src/runtime/rng.ts";
import { IoScheduler } from "../../src/sim/io_scheduler.ts";
import { SimDisk } from "../../src/sim/sim_disk.ts";

/** Issues eight writes together and returns the order in which their callers hear back. */
async function completionOrder(seed: number): Promise<number[]> {
  let moved = 0;
  const disk = new IoScheduler(new SimDisk(new Rng(1)), new Rng(seed), (bytes) => (moved += bytes));
  await disk.mkdirp("/d");
  const file = await disk.open("/d/f", { create: true });
  const order: number[] = [];
  await Promise.all(
    Array.from({ length: 8 }, (_, i) => file.writeAt(new Uint8Array([i]), i).then(() => order.push(i))),
  );
  const back = new Uint8Array(8);
  await file.readAt(back, 0);
  t.same([...back], [0, 1, 2, 3, 4, 5, 6, 7], "every write took effect");
  t.equal(moved, 16, "the bytes of every read and write are reported");
  return order;
}

t.test("the seed decides the order in which pending I/O completes, and only the seed", async (t) => {
  const orders = await Promise.all([1, 2, 3, 4, 5].map(completionOrder));
  t.same(await completionOrder(1), orders[0], "the same seed, the same order");
  const distinct = new Set(orders.map((o) => o.join(",")));
  t.ok(distinct.size > 1, `five seeds gave ${distinct.size} different orders`);
  t.ok(orders.some((o) => o.join(",") !== "0,1,2,3,4,5,6,7"), "some order is not the order of the calls");
});

t.test("an error reaches its caller after the delay, unchanged", async (t) => {
  const disk = new IoScheduler(new SimDisk(new Rng(1)), new Rng(9));
  const error = await disk.open("/missing/file").catch((e) => e);
  t.match(String(error), /Cannot open \/missing\/file/);
});

t.test("a revoked view (a crashed process) can no longer touch the disk; a new view can", async (t) => {
  const raw = new SimDisk(new Rng(1));
  const dead = new IoScheduler(raw, new Rng(2));
  await dead.mkdirp("/d");
  const file = await dead.open("/d/f", { create: true });
  dead.revoke();
  t.match(String(await dead.rename("/d/f", "/d/g").catch((e) => e)), /the process crashed/);
  t.match(String(await file.writeAt(new Uint8Array([1]), 0).catch((e) => e)), /the process crashed/);
  const alive = new IoScheduler(raw, new Rng(3));
  t.same(await alive.list("/d"), ["f"], "nothing the dead process asked for happened");
});
