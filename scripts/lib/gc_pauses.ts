/**
 * A phase's garbage collections, from V8's GC profiler (`node:v8` `GCProfiler`): how many of each
 * kind and the longest pause of each. A tick that falls due in a pause fires that much later, so a
 * phase's worst tick next to its longest full collection says whether the collector set it.
 */
export interface GcPauses {
  full_gcs: number;
  full_gc_pause_ms_max: number | null;
  scavenges: number;
  scavenge_pause_ms_max: number | null;
}

/** One entry of the profiler's `statistics`: its kind and what it cost, in the runtime's unit. */
export interface GcProfilerEntry {
  gcType: string;
  cost: number;
}

/**
 * The profiler's `cost` unit differs by runtime (measured: Deno 2.9 reports nanoseconds, Node 20
 * microseconds), so the caller says how many milliseconds one unit is.
 */
export function summarizeGcPauses(entries: readonly GcProfilerEntry[], msPerCostUnit: number): GcPauses {
  const pauses = (type: string) =>
    entries.filter((e) => e.gcType === type).map((e) => e.cost * msPerCostUnit);
  const full = pauses("MarkSweepCompact");
  const scavenges = pauses("Scavenge");
  const max = (values: number[]) => values.length === 0 ? null : Number(Math.max(...values).toFixed(3));
  return {
    full_gcs: full.length,
    full_gc_pause_ms_max: max(full),
    scavenges: scavenges.length,
    scavenge_pause_ms_max: max(scavenges),
  };
}
