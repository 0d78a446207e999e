import { GCProfiler } from "node:v8";
import t from "tap";
import { summarizeGcPauses } from "../../scripts/lib/gc_pauses.ts";

// Each kind is counted apart and its longest pause converted to milliseconds; incremental marking
// steps are neither kind.
t.test("summarizeGcPauses counts each kind and keeps its longest pause in ms", (t) => {
  const entries = [
    { gcType: "Scavenge", cost: 1_500_000 },
    { gcType: "IncrementalMarking", cost: 900_000 },
    { gcType: "MarkSweepCompact", cost: 7_250_000 },
    { gcType: "Scavenge", cost: 3_200_000 },
    { gcType: "MarkSweepCompact", cost: 4_000_000 },
  ];
  t.same(summarizeGcPauses(entries, 1e-6), {
    full_gcs: 2,
    full_gc_pause_ms_max: 7.25,
    scavenges: 2,
    scavenge_pause_ms_max: 3.2,
  });
  t.same(summarizeGcPauses([], 1e-6), {
    full_gcs: 0,
    full_gc_pause_ms_max: null,
    scavenges: 0,
    scavenge_pause_ms_max: null,
  });
  t.end();
});

// The profiler's entries have the shape the summary reads: enough short-lived garbage to fill the
// young generation a few times shows up as scavenges (here under Node, whose unit is the microsecond).
t.test("the runtime's GC profiler reports the collections garbage causes", (t) => {
  const profiler = new GCProfiler();
  profiler.start();
  let kept = 0;
  for (let round = 0; round < 200; round++) {
    const garbage = Array.from({ length: 10_000 }, (_, i) => ({ i, text: `item ${i}` }));
    kept += garbage.length;
  }
  const result = profiler.stop();
  const summary = summarizeGcPauses(result?.statistics ?? [], 1e-3);
  t.ok(summary.scavenges > 0, `${kept} objects made garbage; collections: ${JSON.stringify(summary)}`);
  t.ok(
    summary.scavenge_pause_ms_max! > 0 && summary.scavenge_pause_ms_max! < 1000,
    "a pause in milliseconds",
  );
  t.end();
});
