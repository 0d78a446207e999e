import t from "tap";
import { PacedSweep } from "../../src/runtime/paced_sweep.ts";

t.test("a sweep visits every key once per period, a share per tick", (t) => {
  const sweep = new PacedSweep<number>({ periodMs: 1000, tickIntervalMs: 10, perTickMax: 1000 });
  for (let k = 0; k < 10_000; k++) sweep.add(k);
  const visits = new Map<number, number>();
  let largestShare = 0;
  for (let nowMs = 0; nowMs < 3000; nowMs += 10) {
    const share = sweep.next(nowMs);
    largestShare = Math.max(largestShare, share.length);
    for (const k of share) visits.set(k, (visits.get(k) ?? 0) + 1);
  }
  t.equal(largestShare, 100, "10,000 keys over 100 ticks: 100 per tick");
  t.same(new Set(visits.values()), new Set([3]), "each key three times in three periods");
  t.end();
});

t.test("a few keys wait for the next period; a key that left is skipped; the share is capped", (t) => {
  const sweep = new PacedSweep<string>({ periodMs: 1000, tickIntervalMs: 10, perTickMax: 2 });
  sweep.add("a");
  t.same(sweep.next(0), ["a"]);
  t.same(sweep.next(10), [], "the round is done and the period not up");
  t.same(sweep.next(1000), ["a"]);
  for (const k of ["b", "c", "d", "e"]) sweep.add(k);
  sweep.delete("a");
  t.same(sweep.next(2000), ["b"], "four keys over a hundred ticks: one per tick");
  t.same(sweep.next(2010), ["c"]);
  sweep.delete("d");
  t.same(sweep.next(2020), ["e"], "d left the sweep");
  t.equal(sweep.size, 3);
  for (let k = 0; k < 1000; k++) sweep.add(String(k));
  t.same(sweep.next(3000).length, 2, "a thousand keys, but at most perTickMax per tick");
  t.throws(() => new PacedSweep({ periodMs: 5, tickIntervalMs: 10, perTickMax: 1 }), /at least one tick/);
  t.end();
});
