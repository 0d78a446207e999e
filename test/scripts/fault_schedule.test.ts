import t from "tap";
import { faultKinds, faultSchedule, faultStepsMax } from "../../scripts/lib/campaign/fault_schedule.ts";

const leaseTtlMs = 2000;

t.test("a seed gives one schedule, and another seed another", (t) => {
  const a = faultSchedule({ seed: 42, durationMs: 120_000, leaseTtlMs });
  t.same(faultSchedule({ seed: 42, durationMs: 120_000, leaseTtlMs }), a, "replayed from its seed");
  t.notSame(faultSchedule({ seed: 43, durationMs: 120_000, leaseTtlMs }), a);
  t.end();
});

t.test("faults come one after another, within the duration, each healed before the next", (t) => {
  for (const seed of [0, 1, 7, 0xffff_ffff]) {
    const steps = faultSchedule({ seed, durationMs: 60_000, leaseTtlMs, warmupMs: 3000 });
    t.ok(steps.length > 5, `seed ${seed}: ${steps.length} faults in a minute`);
    t.equal(steps[0]!.startMs, 3000, "the first after the warm-up");
    for (const [i, step] of steps.entries()) {
      t.ok(step.startMs + step.holdMs <= 60_000, "healed within the duration");
      if (i > 0) {
        const previous = steps[i - 1]!;
        t.ok(step.startMs >= previous.startMs + previous.holdMs + 500, "a quiet gap after each");
      }
      // A paused leader is held past its lease, so that it is fenced.
      if (step.kind === "pause_leader") t.ok(step.holdMs >= 2 * leaseTtlMs);
    }
  }
  t.end();
});

t.test("over many seeds every kind of fault is drawn, and a schedule is bounded", (t) => {
  const kinds = new Set<string>();
  for (let seed = 0; seed < 50; seed++) {
    for (const step of faultSchedule({ seed, durationMs: 30_000, leaseTtlMs })) kinds.add(step.kind);
  }
  t.same([...kinds].sort(), [...faultKinds].sort());
  const long = faultSchedule({ seed: 5, durationMs: 24 * 3_600_000, leaseTtlMs });
  t.equal(long.length, faultStepsMax, "a day's campaign stops at the bound");
  t.same(faultSchedule({ seed: 5, durationMs: 1000, leaseTtlMs }), [], "too short for any fault");
  t.end();
});
