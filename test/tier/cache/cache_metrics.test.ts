import t from "tap";
import { createMetricsRegistry } from "../../../src/runtime/metrics/metrics.ts";
import { CacheMetrics } from "../../../src/tier/cache/cache_metrics.ts";

t.test("the size gauges sum every cache's source at scrape time", async (t) => {
  const registry = createMetricsRegistry();
  const metrics = new CacheMetrics(registry);
  const first = { budgetBytes: 10_000, usedBytes: 1000, chunkCount: 2 };
  const second = { budgetBytes: 5000, usedBytes: 500, chunkCount: 1 };
  metrics.addSource(first);
  metrics.addSource(second);
  const gauge = async (name: string) =>
    Number(new RegExp(`^${name} (\\d+)$`, "m").exec(await registry.metrics())?.[1]);
  t.equal(await gauge("strata_cache_size_bytes"), 1500);
  t.equal(await gauge("strata_cache_chunks"), 3);
  t.equal(await gauge("strata_cache_budget_bytes"), 15_000);
  first.usedBytes = 4000;
  t.equal(await gauge("strata_cache_size_bytes"), 4500, "read when scraped, not when added");
});

t.test("the counters and the fetch histogram are registered under their names", async (t) => {
  const registry = createMetricsRegistry();
  const metrics = new CacheMetrics(registry);
  metrics.hits.inc();
  metrics.hydrations.inc({ kind: "readahead" });
  metrics.fetchSeconds.observe({ kind: "chunk" }, 0.02);
  const text = await registry.metrics();
  t.match(text, /^strata_cache_hits_total 1$/m);
  t.match(text, /^strata_cache_hydrations_total\{kind="readahead"\} 1$/m);
  t.match(text, /^strata_cache_fetch_seconds_count\{kind="chunk"\} 1$/m);
  for (
    const name of [
      "strata_cache_misses_total",
      "strata_cache_fetched_bytes_total",
      "strata_cache_evictions_total",
      "strata_cache_checksum_failures_total",
      "strata_cache_corrupt_chunk_files_total",
      "strata_cache_transient_replies_total",
      "strata_cache_reservation_refusals_total",
      "strata_tier_data_loss_total",
    ]
  ) {
    t.match(text, new RegExp(`^# TYPE ${name} counter$`, "m"), name);
  }
});
