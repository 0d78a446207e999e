import {
  bucketGrowth,
  type HistogramBucket,
  histogramBuckets,
  histogramQuantile,
  parsePrometheusText,
  sampleValue,
} from "./prometheus_text.ts";

/**
 * What one scrape of `/metrics` says about one shard's pump: the lateness histogram so far
 * (`strata_pump_tick_lateness_seconds`), the worst lateness since the scrape before
 * (`strata_pump_tick_lateness_max_seconds`, which the scrape resets) and the missed ticks so far.
 */
export interface LatenessScrape {
  buckets: HistogramBucket[];
  maxMs: number;
  missedTicks: number;
}

/** A shard's lateness figures from the Prometheus text of one scrape. */
export function readLatenessScrape(text: string, shard: string): LatenessScrape {
  const samples = parsePrometheusText(text);
  const labels = { shard };
  const maxSeconds = sampleValue(samples, "strata_pump_tick_lateness_max_seconds", labels);
  if (maxSeconds === null) {
    throw new Error(`Cannot read tick lateness: no strata_pump_tick_lateness_max_seconds for shard ${shard}`);
  }
  return {
    buckets: histogramBuckets(samples, "strata_pump_tick_lateness_seconds", labels),
    maxMs: maxSeconds * 1000,
    missedTicks: sampleValue(samples, "strata_pump_missed_ticks_total", labels) ?? 0,
  };
}

/** The tick's lateness between two scrapes, in milliseconds. */
export interface WindowLateness {
  /** Interpolated within its histogram bucket, and never above the max. */
  p99_ms: number;
  /** The top of the bucket that holds the p99: the resolution the estimate has. */
  p99_bucket_upper_ms: number;
  max_ms: number;
  ticks: number;
  missed_ticks: number;
}

/** Lateness between two scrapes: p99 from the histogram's growth, max from the gauge of the later one. */
export function latenessBetween(start: LatenessScrape, end: LatenessScrape): WindowLateness {
  const growth = bucketGrowth(start.buckets, end.buckets);
  const p99 = histogramQuantile(0.99, growth);
  if (p99 === null) throw new Error("Cannot measure tick lateness: no tick fired between two scrapes");
  return {
    p99_ms: round(Math.min(p99.estimate * 1000, end.maxMs)),
    p99_bucket_upper_ms: round(p99.bucketUpper * 1000),
    max_ms: round(end.maxMs),
    ticks: growth.at(-1)!.count,
    missed_ticks: end.missedTicks - start.missedTicks,
  };
}

const round = (x: number) => Math.round(x * 100) / 100;
