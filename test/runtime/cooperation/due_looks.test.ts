import t from "tap";
import { DueLooks } from "../../../src/runtime/cooperation/due_looks.ts";

t.test("an idle key is looked at once per idle interval, a share per tick", (t) => {
  const looks = new DueLooks<number>({ idleLookIntervalMs: 1000, dueLooksPerTickMax: 100 });
  for (let k = 0; k < 1000; k++) looks.add(k, 0);
  const visits = new Map<number, number>();
  let largestTick = 0;
  for (let nowMs = 0; nowMs < 3000; nowMs += 10) {
    const taken = looks.take(nowMs);
    largestTick = Math.max(largestTick, taken.length);
    for (const k of taken) visits.set(k, (visits.get(k) ?? 0) + 1);
  }
  t.equal(largestTick, 100, "no tick takes more than the share");
  t.same(new Set(visits.values()), new Set([3]), "each key three times in three intervals");
  t.equal(looks.size, 1000);
  t.end();
});

t.test("a touched key is looked at the next tick, once, and a look may bring the next forward", (t) => {
  const looks = new DueLooks<string>({ idleLookIntervalMs: 1000, dueLooksPerTickMax: 10 });
  looks.add("a", 0);
  looks.add("b", 0);
  t.same(looks.take(0), ["a", "b"]);
  t.same(looks.take(10), [], "neither is due before the interval");
  looks.touch("b");
  looks.touch("b");
  t.same(looks.take(20), ["b"], "touched twice, looked at once");
  looks.bringForward("a", 500);
  t.same(looks.take(490), []);
  t.same(looks.take(500), ["a"], "due when the look said");
  t.same(looks.take(1000), [], "a was rescheduled from its look at 500; b from 20");
  t.same(looks.take(1020), ["b"]);
  t.same(looks.take(1500), ["a"]);
  t.end();
});

t.test("a key touched and due at once is taken once; a removed key is never taken", (t) => {
  const looks = new DueLooks<string>({ idleLookIntervalMs: 100, dueLooksPerTickMax: 10 });
  looks.add("a", 0);
  looks.touch("a");
  t.same(looks.take(0), ["a"]);
  looks.remove("a");
  looks.touch("a");
  looks.bringForward("a", 0);
  t.same(looks.take(1000), [], "gone: neither a touch nor a due time brings it back");
  t.equal(looks.has("a"), false);
  t.throws(() => new DueLooks({ idleLookIntervalMs: 0, dueLooksPerTickMax: 1 }), /idle look interval/);
  t.end();
});
