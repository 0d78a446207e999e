import t from "tap";
import {
  bucketGrowth,
  histogramBuckets,
  histogramQuantile,
  parsePrometheusText,
  sampleValue,
} from "../../scripts/lib/prometheus_text.ts";

const page = `# HELP strata_pump_tick_lateness_seconds How late the consensus tick fired.
# TYPE strata_pump_tick_lateness_seconds histogram
strata_pump_tick_lateness_seconds_bucket{le="0.001",shard="0"} 90
strata_pump_tick_lateness_seconds_bucket{le="0.002",shard="0"} 98
strata_pump_tick_lateness_seconds_bucket{le="0.005",shard="0"} 100
strata_pump_tick_lateness_seconds_bucket{le="+Inf",shard="0"} 100
strata_pump_tick_lateness_seconds_sum{shard="0"} 0.05
strata_pump_tick_lateness_seconds_count{shard="0"} 100
strata_pump_tick_lateness_max_seconds{shard="0"} 0.0042
strata_label_with_quote{path="a \\"b\\", c"} 1
process_start 1.7e9
`;

// Samples keep their labels, including quoted commas, and their values in any number form.
t.test("parsePrometheusText reads names, labels and values and skips comments", (t) => {
  const samples = parsePrometheusText(page);
  t.equal(samples.length, 9);
  t.equal(sampleValue(samples, "strata_pump_tick_lateness_max_seconds", { shard: "0" }), 0.0042);
  t.equal(sampleValue(samples, "strata_label_with_quote"), 1);
  t.same(samples[7]!.labels, { path: 'a \\"b\\", c' });
  t.equal(sampleValue(samples, "process_start"), 1.7e9);
  t.equal(sampleValue(samples, "absent"), null);
  t.throws(() => parsePrometheusText("not a sample line at all {"), /a line is not a sample/);
  t.throws(() => parsePrometheusText("x 12abc"), /is not a number/);
  t.end();
});

// Buckets come back cumulative by ascending bound; two readings subtract bucket by bucket.
t.test("histogramBuckets and bucketGrowth give the observations between two scrapes", (t) => {
  const end = histogramBuckets(parsePrometheusText(page), "strata_pump_tick_lateness_seconds", {
    shard: "0",
  });
  t.same(end.map((b) => b.le), [0.001, 0.002, 0.005, Infinity]);
  const start = end.map((b) => ({ le: b.le, count: b.count / 2 }));
  t.same(bucketGrowth(start, end).map((b) => b.count), [45, 49, 50, 50]);
  t.throws(() => bucketGrowth(end, start), /shrank/);
  t.throws(() => bucketGrowth(end.slice(1), end), /buckets differ/);
  t.throws(() => histogramBuckets([], "x"), /no buckets/);
  t.end();
});

// The quantile interpolates inside its bucket, as histogram_quantile does, and names the bucket's top.
t.test("histogramQuantile interpolates within the bucket that holds the rank", (t) => {
  const buckets = histogramBuckets(parsePrometheusText(page), "strata_pump_tick_lateness_seconds");
  const p99 = histogramQuantile(0.99, buckets)!;
  // Rank 99 of 100 lies in (0.002, 0.005], which holds ranks 99 and 100: half way through it.
  t.equal(p99.bucketUpper, 0.005);
  t.ok(Math.abs(p99.estimate - 0.0035) < 1e-12, `p99 ${p99.estimate}`);
  const p50 = histogramQuantile(0.5, buckets)!;
  t.ok(Math.abs(p50.estimate - 0.001 * (50 / 90)) < 1e-12, `p50 ${p50.estimate}`);
  const beyond = [{ le: 0.001, count: 1 }, { le: Infinity, count: 10 }];
  t.same(
    histogramQuantile(0.99, beyond),
    { estimate: 0.001, bucketUpper: 0.001 },
    "above every finite bound",
  );
  t.equal(histogramQuantile(0.99, [{ le: Infinity, count: 0 }]), null, "no observation");
  t.end();
});
