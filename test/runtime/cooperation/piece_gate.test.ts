import { setTimeout as sleep } from "node:timers/promises";
import t from "tap";
import { PieceGate } from "../../../src/runtime/cooperation/piece_gate.ts";

t.test("pieces of many tasks are spread over turns of the event loop: a timer runs between any two", async (t) => {
  const gate = new PieceGate();
  const events: string[] = [];
  let timerFired = 0;
  let running = true;
  // A timer re-armed each time it fires.
  const ticker = (async () => {
    while (running) {
      await sleep(0);
      timerFired++;
      events.push("tick");
    }
  })();
  // Each piece takes 2 ms: the 1 ms timer is always due by the end of one, so it must fire before
  // the next piece runs, unless two pieces share one turn of the loop.
  const task = async (name: string) => {
    for (let i = 0; i < 5; i++) {
      await gate.turn();
      const started = performance.now();
      while (performance.now() - started < 2) { /* a piece of CPU work */ }
      events.push(name);
    }
  };
  await Promise.all([task("a"), task("b"), task("c")]);
  running = false;
  await ticker;
  const pieces = events.filter((e) => e !== "tick");
  t.equal(pieces.length, 15, "every piece ran");
  let consecutive = 0;
  for (let i = 1; i < events.length; i++) if (events[i] !== "tick" && events[i - 1] !== "tick") consecutive++;
  t.equal(consecutive, 0, `no two pieces ran in one turn (${timerFired} timer firings)`);
  t.end();
});

t.test("without the gate, tasks that only yield run their pieces back to back in one turn (what the gate prevents)", async (t) => {
  const { yieldToReactor } = await import("../../../src/runtime/cooperation/piece_gate.ts");
  const events: string[] = [];
  let running = true;
  const ticker = (async () => {
    while (running) {
      await sleep(0);
      events.push("tick");
    }
  })();
  const task = async (name: string) => {
    for (let i = 0; i < 5; i++) {
      await yieldToReactor();
      const started = performance.now();
      while (performance.now() - started < 2) { /* a piece of CPU work */ }
      events.push(name);
    }
  };
  await Promise.all([task("a"), task("b"), task("c")]);
  running = false;
  await ticker;
  let consecutive = 0;
  for (let i = 1; i < events.length; i++) if (events[i] !== "tick" && events[i - 1] !== "tick") consecutive++;
  t.ok(consecutive > 0, `${consecutive} pieces ran right after another piece`);
  t.end();
});

t.test("beyond its bound of queued turns the gate does not fail a caller: it yields instead of queueing", async (t) => {
  const gate = new PieceGate(2);
  const outcomes = await Promise.allSettled(Array.from({ length: 6 }, () => gate.turn()));
  t.ok(outcomes.every((o) => o.status === "fulfilled"), "every caller got its turn or a yield");
  t.equal(gate.waiting, 0, "nobody left queued");
});
