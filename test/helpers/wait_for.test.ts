import t from "tap";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { MissedDeadlineError, passTime, realTime, settlesWithin, virtualTime, waitFor } from "./wait_for.ts";

// The one wait helper of tests and scripts: its paces, its deadlines on their clocks, and what it
// throws when a condition does not hold in time.

t.test("a condition checked in real time: the wait ends once it holds, and a missed deadline names it", async (t) => {
  let checks = 0;
  await waitFor("the third check", () => ++checks === 3, { deadlineMs: 5000, pace: realTime(1) });
  t.equal(checks, 3, "checked until it held, not once more");
  const missed = await waitFor("never", () => false, { deadlineMs: 30, pace: realTime(5) }).catch((e) => e);
  t.ok(missed instanceof MissedDeadlineError, `${missed}`);
  t.match(missed.message, /^Cannot wait for never: not within 30 real ms$/);
});

t.test("a throwing condition ends the wait, unless throwMeansNotYet, where its last error is the cause", async (t) => {
  const refused = new Error("Cannot connect: refused");
  const thrown = await waitFor("a throw", () => {
    throw refused;
  }, { deadlineMs: 1000, pace: realTime(1) }).catch((e) => e);
  t.equal(thrown, refused, "the condition's own error");
  let tries = 0;
  await waitFor("the server to answer", () => {
    if (++tries < 3) throw refused;
    return true;
  }, { deadlineMs: 5000, pace: realTime(1), throwMeansNotYet: true });
  t.equal(tries, 3, "two refusals counted as not yet");
  const missed = await waitFor("a refusing server", () => {
    throw refused;
  }, { deadlineMs: 20, pace: realTime(1), throwMeansNotYet: true }).catch((e) => e);
  t.ok(missed instanceof MissedDeadlineError);
  t.equal(missed.cause, refused, "the last refusal is the cause");
});

t.test("realTime's wake checks again as soon as it resolves, without waiting out the poll", async (t) => {
  let ready = false;
  let wake = () => {};
  setTimeout(() => {
    ready = true;
    wake();
  }, 10);
  const tookMs = await waitFor("the event", () => ready, {
    deadlineMs: 5000,
    pace: realTime(60_000, () => new Promise<void>((resolve) => (wake = resolve))),
  });
  t.ok(tookMs < 2000, `woken after ${Math.round(tookMs)} ms, not after the 60 s poll`);
});

t.test("virtualTime moves the clock a step at a time, tells onStep, and measures the deadline on it", async (t) => {
  const clock = new VirtualClock();
  const steps: number[] = [];
  const fired: number[] = [];
  clock.schedule(25, () => fired.push(clock.nowMs()));
  const tookMs = await waitFor("the timer", () => fired.length > 0, {
    deadlineMs: 1000,
    pace: virtualTime(clock, 10, { onStep: (nowMs) => steps.push(nowMs) }),
  });
  t.same(fired, [25], "the timer fired at its time");
  t.equal(tookMs, 30, "seen at the first check after it fired: 30 virtual ms");
  t.same(steps, [10, 20, 30]);
  const missed = await waitFor("never", () => false, { deadlineMs: 100, pace: virtualTime(clock, 10) })
    .catch((e) => e);
  t.match(missed.message, /not within 100 virtual ms/);
  t.equal(clock.nowMs(), 30 + 110, "one step past the deadline, then no more");
});

t.test("passTime lets exactly that stretch pass on the pace's clock", async (t) => {
  const clock = new VirtualClock();
  let steps = 0;
  await passTime(1000, virtualTime(clock, 10, { onStep: () => steps++ }));
  t.equal(clock.nowMs(), 1000);
  t.equal(steps, 100);
});

t.test("settlesWithin answers the promise's value, or fails naming what did not settle", async (t) => {
  t.equal(await settlesWithin(Promise.resolve(7), "a value"), 7);
  const never = new Promise<number>(() => {});
  const missed = await settlesWithin(never, "a promise that never settles", 20).catch((e: Error) => e);
  t.ok(missed instanceof MissedDeadlineError);
  t.match(String(missed), /Cannot wait for a promise that never settles: not settled within 20 ms/);
});
