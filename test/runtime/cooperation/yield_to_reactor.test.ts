import t from "tap";
import { yieldToReactor } from "../../../src/runtime/cooperation/piece_gate.ts";

t.test("a 1 ms interval timer fires between consecutive pieces of a CPU-only loop that yields", async (t) => {
  let fired = 0;
  const timer = setInterval(() => fired++, 1);
  const firedBetween: number[] = [];
  for (let piece = 0; piece < 30; piece++) {
    const before = fired;
    const start = performance.now();
    while (performance.now() - start < 2) { /* 2 ms of CPU work: the interval falls due during it */ }
    await yieldToReactor();
    firedBetween.push(fired - before);
  }
  clearInterval(timer);
  t.same(firedBetween.filter((n) => n === 0), [], "the timer fired between every pair of pieces");
});

t.test("a resolved promise alone is not a yield: the same loop without yieldToReactor starves the timer", async (t) => {
  let fired = 0;
  const timer = setInterval(() => fired++, 1);
  for (let piece = 0; piece < 10; piece++) {
    const start = performance.now();
    while (performance.now() - start < 2) { /* CPU work */ }
    await Promise.resolve();
  }
  const firedDuring = fired;
  clearInterval(timer);
  t.equal(firedDuring, 0, "microtasks never let the timer phase run");
});
