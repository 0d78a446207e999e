import t from "tap";
import { directIoAlignBytes } from "../../../../src/runtime/disk/disk.ts";
import { SharedSlots } from "../../../../src/runtime/disk/worker/file_workers.ts";

t.test("slots are disjoint views of one shared memory, each starting on the alignment", async (t) => {
  // Proves what a direct read or write needs of a slot, and that slots never overlap.
  const slots = new SharedSlots({ slotBytes: 5000, slotsMax: 3, waitersMax: 4, name: "test slot" });
  t.ok(slots.memory instanceof SharedArrayBuffer, "the memory can be posted to a worker without a copy");
  t.equal(slots.strideBytes % directIoAlignBytes, 0);
  t.ok(slots.strideBytes >= 5000);
  const held = [await slots.acquire(), await slots.acquire(), await slots.acquire()];
  t.same(held.map((s) => s.index).sort(), [0, 1, 2]);
  for (const slot of held) {
    t.equal(slot.bytes.byteOffset % directIoAlignBytes, 0, `slot ${slot.index} starts aligned`);
    t.equal(slot.bytes.buffer, slots.memory, "a view of the shared memory");
    t.equal(slot.bytes.byteOffset, slot.index * slots.strideBytes, "where the worker finds it");
    t.equal(slot.bytes.length, 5000);
    slot.bytes.fill(slot.index + 1);
  }
  for (const slot of held) {
    t.ok(slot.bytes.every((b) => b === slot.index + 1), `slot ${slot.index} kept its bytes`);
  }
  for (const slot of held) slot[Symbol.dispose]();
  t.equal(slots.inUse, 0);
});

t.test("a caller past the slots waits its turn, FIFO, and gets the slot given back", async (t) => {
  // Proves the bound: never more slots lent than there are, and waiters served in order.
  const slots = new SharedSlots({ slotBytes: 16, slotsMax: 1, waitersMax: 4, name: "test slot" });
  const first = await slots.acquire();
  const order: string[] = [];
  const second = slots.acquire().then((s) => (order.push("second"), s));
  const third = slots.acquire().then((s) => (order.push("third"), s));
  await Promise.resolve();
  t.same(order, [], "both wait while the only slot is lent");
  t.equal(slots.queueFull, false, "two of four places in the queue are taken");
  first[Symbol.dispose]();
  const s2 = await second;
  t.equal(s2.index, first.index, "the slot given back is the one lent next");
  s2[Symbol.dispose]();
  (await third)[Symbol.dispose]();
  t.same(order, ["second", "third"]);
});

t.test("queueFull says when acquire would be refused: no slot free and no room to wait", async (t) => {
  // Proves the test the read path uses to do its own read rather than be refused.
  const slots = new SharedSlots({ slotBytes: 16, slotsMax: 1, waitersMax: 0, name: "test slot" });
  t.equal(slots.queueFull, false, "a slot is free");
  const held = await slots.acquire();
  t.equal(slots.queueFull, true, "the slot is lent and nobody may wait");
  await t.rejects(slots.acquire(), { name: "QueueFullError" });
  held[Symbol.dispose]();
  t.equal(slots.queueFull, false);
});

t.test("giving a slot back twice, or bad sizes, fail an assertion", async (t) => {
  // Proves the guards: a double give-back would lend one slot to two requests.
  const slots = new SharedSlots({ slotBytes: 16, slotsMax: 1, waitersMax: 1, name: "test slot" });
  const slot = await slots.acquire();
  slot[Symbol.dispose]();
  t.throws(() => slot[Symbol.dispose](), /Cannot give a slot back twice/);
  t.throws(() => new SharedSlots({ slotBytes: 0, slotsMax: 1, waitersMax: 1, name: "x" }), /slotBytes/);
  t.throws(() => new SharedSlots({ slotBytes: 1, slotsMax: 0, waitersMax: 1, name: "x" }), /slotsMax/);
});
