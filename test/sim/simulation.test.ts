import t from "tap";
import { initCrc32c } from "../../src/runtime/crc32c.ts";
import {
  acknowledgedPresent,
  caughtUp,
  evictionSound,
  floorMonotone,
  readBackIntact,
} from "../../src/sim/invariants.ts";
import { scenarios } from "../../src/sim/scenarios.ts";
import { runSimulation } from "../../src/sim/simulation.ts";

await initCrc32c();

t.test("every scenario built so far holds its invariants on a fixed set of seeds", async (t) => {
  for (const scenario of Object.values(scenarios)) {
    for (const seed of [1, 2, 3]) {
      const r = await runSimulation({ seed, scenario, steps: 800 });
      t.ok(r.ok, `${scenario.name} seed ${seed}: ${r.violation ?? "ok"}`) ||
        t.comment(r.trail.slice(-20).join("\n"));
      t.ok(
        r.acknowledged > 100 && r.floor > 0,
        `${scenario.name} seed ${seed}: ${r.acknowledged} acknowledged, floor ${r.floor}`,
      );
    }
  }
});

t.test("one seed replays exactly; another seed is another run", async (t) => {
  const scenario = scenarios["swarm"]!;
  const a = await runSimulation({ seed: 7, scenario, steps: 600 });
  const b = await runSimulation({ seed: 7, scenario, steps: 600 });
  const c = await runSimulation({ seed: 8, scenario, steps: 600 });
  t.equal(a.traceHash, b.traceHash, "same seed, same trace hash");
  t.not(a.traceHash, c.traceHash, "different seeds differ");
});

t.test("the checks catch lost data: on a disk whose fsync lies, crashes lose acknowledged messages and a run fails", async (t) => {
  const scenario = scenarios["crash_during_eviction"]!;
  const failing = [];
  for (let seed = 1; seed <= 5; seed++) {
    const r = await runSimulation({ seed, scenario, steps: 800, lyingFsync: true });
    if (!r.ok) failing.push(r);
  }
  t.ok(failing.length > 0, `${failing.length} of 5 runs failed`);
  t.match(
    failing[0]?.violation,
    /acknowledged|read back|missing|could not be opened/,
    `${failing[0]?.violation}`,
  );
  t.ok((failing[0]?.trail.length ?? 0) > 0, "with the trail of events that led there");
});

t.test("the invariant checkers, each alone", (t) => {
  const m = (offset: number, fill = offset & 0xff) => ({ offset, payload: new Uint8Array(3).fill(fill) });
  t.equal(readBackIntact([m(0), m(1), m(2)]), null);
  t.match(readBackIntact([m(0), m(1, 9)]), /message 1 read back with other bytes/);
  t.match(readBackIntact([m(0), m(2)]), /not dense/);
  t.equal(acknowledgedPresent(3, 0, [0, 1, 2]), null);
  t.match(acknowledgedPresent(3, 0, [0, 2]), /acknowledged message 1 is missing/);
  t.equal(acknowledgedPresent(3, 2, [2]), null, "below the first retained offset is retention's business");
  t.equal(floorMonotone(5, 5), null);
  t.match(floorMonotone(5, 4), /moved back/);
  const seg = (startOffset: number, endOffset: number, location: "local" | "uploaded" | "remote") => ({
    startOffset,
    endOffset,
    location,
  });
  t.equal(evictionSound([seg(0, 9, "remote"), seg(10, 19, "uploaded"), seg(20, 29, "local")], 20), null);
  t.match(evictionSound([seg(0, 9, "remote"), seg(10, 19, "remote")], 15), /floor is 15/);
  t.match(evictionSound([seg(0, 9, "local"), seg(10, 19, "remote")], 30), /not a prefix/);
  t.equal(caughtUp(30, 29), null);
  t.match(caughtUp(20, 29), /did not catch up/);
  t.end();
});
