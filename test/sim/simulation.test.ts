import t from "tap";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import {
  acknowledgedPresent,
  cacheWithinBudget,
  caughtUp,
  chainGapless,
  consumerOffsetDurable,
  deletedOldEnough,
  evictionSound,
  floorMonotone,
  markersBacked,
  orphansCollected,
  readBackIntact,
  stretchBounded,
} from "../../src/sim/invariants.ts";
import { scenarios } from "../../src/sim/scenarios.ts";
import { runSimulation } from "../../src/sim/simulation.ts";

await initCrc32c();

t.test("every scenario holds its invariants on a fixed set of seeds", async (t) => {
  for (const scenario of Object.values(scenarios)) {
    for (const seed of [1, 2, 3]) {
      const r = await runSimulation({ seed, scenario, steps: 800 });
      t.ok(r.ok, `${scenario.name} seed ${seed}: ${r.violation ?? "ok"}`) ||
        t.comment(r.trail.slice(-20).join("\n"));
      // The run did work: purges, wipes and deletions restart the log, so count the whole run.
      t.ok(
        r.acknowledgedTotal > 100,
        `${scenario.name} seed ${seed}: ${r.acknowledgedTotal} acknowledged in all, ${r.acknowledged} at the end`,
      );
    }
  }
});

t.test("merges: segments rolled by age are merged while crashes strike, and the chain holds (seeds 1 to 4)", async (t) => {
  let merged = 0;
  for (const seed of [1, 2, 3, 4]) {
    const r = await runSimulation({ seed, scenario: scenarios["merges"]!, steps: 1500 });
    t.ok(r.ok, `seed ${seed}: ${r.violation ?? "ok"}`) || t.comment(r.trail.slice(-20).join("\n"));
    merged += r.mergedObjects;
    t.comment(`seed ${seed}: ${r.mergedObjects} merged objects, ${r.crashes} crashes`);
  }
  t.ok(merged >= 4, `${merged} merged objects over the four runs`);
});

t.test("the chain check catches a gap and an overlap", (t) => {
  const s = (startOffset: number, endOffset: number) => ({
    startOffset,
    endOffset,
    location: "remote" as const,
  });
  t.equal(chainGapless([s(0, 9), s(10, 19), s(20, 29)]), null);
  t.match(chainGapless([s(0, 9), s(11, 19)]), /segment 11 does not follow segment 0, which ends at 9/);
  t.match(chainGapless([s(0, 19), s(10, 29)]), /segment 10 does not follow/);
  t.end();
});

t.test("an upload of a purged generation finishing late lends its checksum to no marker of the next (seed 505)", async (t) => {
  // The run that found it: segment 0 of the old generation finished uploading after a purge, its
  // CRC32 was kept for offset 0, and the new segment 0's marker was written with it.
  const r = await runSimulation({ seed: 505, scenario: scenarios["purge_during_upload"]!, steps: 2000 });
  t.ok(r.ok, r.violation ?? "ok") || t.comment(r.trail.slice(-20).join("\n"));
});

t.test("crash_during_eviction strikes before every durable step of an eviction, and every reboot holds", async (t) => {
  const scenario = scenarios["crash_during_eviction"]!;
  const struck: Record<string, number> = {};
  for (let seed = 1; seed <= 6; seed++) {
    const r = await runSimulation({ seed, scenario, steps: 1000 });
    t.ok(r.ok, `seed ${seed}: ${r.violation ?? "ok"}`);
    for (const [step, n] of Object.entries(r.crashPoints)) struck[step] = (struck[step] ?? 0) + n;
  }
  const steps = [
    "marker open",
    "marker write",
    "marker sync",
    "log unlink",
    "unlink directory sync",
  ];
  for (const step of steps) t.ok((struck[step] ?? 0) > 0, `crashes before ${step}: ${struck[step] ?? 0}`);
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

t.test("the stretch check can fail: with a bound below one upload piece, the first upload breaks it", async (t) => {
  const r = await runSimulation({
    seed: 1,
    scenario: scenarios["store_outage"]!,
    steps: 400,
    stretchBytesMax: 4096,
  });
  t.notOk(r.ok);
  t.match(r.violation, /one loop iteration moved \d+ bytes through the disk, over the bound 4096/);
});

t.test("the checkers of deletion age, markers, orphans, the cache budget, consumer offsets and stretch, each alone", (t) => {
  t.equal(deletedOldEnough("k", 1000, 7000, 5000), null);
  t.match(deletedOldEnough("k", 1000, 3000, 5000), /object k was deleted 2000 ms after its creation/);
  const marker = { startOffset: 0, key: "a/0.log", markerCrc32: 7 };
  t.equal(markersBacked([{ ...marker, objectCrc32: "7" }]), null);
  t.match(markersBacked([{ ...marker, objectCrc32: null }]), /names a\/0.log, which is missing/);
  t.match(markersBacked([{ ...marker, objectCrc32: "8" }]), /says CRC32 7, a\/0.log says 8/);
  t.equal(orphansCollected(["s/c/1/1/0/r-1/0.log"], ["1/1/0/r-1/"]), null);
  t.match(orphansCollected(["s/c/1/1/0/r-0/0.log"], ["1/1/0/r-1/"]), /orphan s\/c\/1\/1\/0\/r-0\/0.log/);
  t.equal(cacheWithinBudget(10, 10), null);
  t.match(cacheWithinBudget(11, 10), /holds 11 bytes, over its budget 10/);
  t.equal(consumerOffsetDurable("c", 5, 5, []), null);
  t.equal(consumerOffsetDurable("c", 9, 5, [7, 9]), null, "a store the crash cut off may have landed");
  t.match(consumerOffsetDurable("c", 3, 5, [7]), /consumer c is at 3, not its acknowledged 5/);
  t.match(consumerOffsetDurable("c", null, 5, []), /is at null/);
  t.equal(stretchBounded(10, 10), null);
  t.match(stretchBounded(11, 10), /moved 11 bytes/);
  t.end();
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
