import t from "tap";
import { DueHeap } from "../../../src/runtime/cooperation/due_looks.ts";
import { Rng } from "../../../src/runtime/rng.ts";

t.test("a due heap hands out what is due, earliest first, and agrees with a model over random changes", (t) => {
  const rng = new Rng(11);
  const heap = new DueHeap<number>();
  const model = new Map<number, number>();
  let nowMs = 0;
  for (let step = 0; step < 4000; step++) {
    const key = rng.int(0, 300);
    const dueMs = nowMs + rng.int(0, 500);
    if (rng.chance(0.1)) {
      heap.remove(key);
      model.delete(key);
    } else if (rng.chance(0.5)) {
      heap.bringForward(key, dueMs);
      model.set(key, Math.min(model.get(key) ?? Infinity, dueMs));
    } else {
      heap.schedule(key, dueMs);
      model.set(key, dueMs);
    }
    if (step % 10 === 0) {
      nowMs += 50;
      const expected = [...model].filter(([, due]) => due <= nowMs).sort((a, b) => a[1] - b[1]);
      const taken = heap.takeDue(nowMs, 1000);
      t.same(taken.map((k) => model.get(k)), expected.map(([, due]) => due), "due keys in order of due time");
      for (const key of taken) model.delete(key);
    }
    if (heap.size !== model.size) t.fail(`size ${heap.size} against ${model.size}`);
  }
  t.equal(heap.size, model.size);
  t.end();
});

t.test("takeDue takes at most its count; Infinity unschedules; a due time cannot be NaN", (t) => {
  const heap = new DueHeap<string>();
  for (const key of ["a", "b", "c"]) heap.schedule(key, 5);
  heap.schedule("later", 100);
  t.same(heap.takeDue(10, 2).length, 2);
  t.same(heap.takeDue(10, 10).length, 1, "the third waits for the next take");
  t.same(heap.takeDue(10, 10), [], "nothing else is due");
  heap.schedule("later", Infinity);
  t.equal(heap.size, 0);
  t.equal(heap.dueAt("later"), undefined);
  t.throws(() => heap.schedule("x", NaN), /NaN/);
  t.throws(() => heap.takeDue(0, 0), /fewer than one/);
  t.end();
});
