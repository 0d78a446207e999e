import t from "tap";
import { concurrently } from "../../../src/runtime/cooperation/concurrently.ts";

t.test("steps run at most concurrencyMax at once and resolve in index order", async (t) => {
  let inFlight = 0;
  let most = 0;
  const results = await concurrently(20, 3, async (i) => {
    inFlight++;
    most = Math.max(most, inFlight);
    await new Promise((resolve) => setImmediate(resolve));
    inFlight--;
    return i * 2;
  });
  t.same(results, Array.from({ length: 20 }, (_, i) => i * 2));
  t.equal(most, 3);
  t.same(await concurrently(0, 4, () => Promise.resolve(1)), []);
});

t.test("after a failure no step starts; those in flight finish; the first failure is thrown", async (t) => {
  const finished: number[] = [];
  const run = concurrently(10, 2, async (i) => {
    await new Promise((resolve) => setImmediate(resolve));
    if (i === 1) throw new Error("step 1 failed");
    finished.push(i);
    return i;
  });
  await t.rejects(run, /step 1 failed/);
  t.same(finished, [0, 2], "step 2 had started with step 1's worker free; nothing after it");
  await t.rejects(concurrently(1, 0, () => Promise.resolve(0)), /no concurrency/);
});
