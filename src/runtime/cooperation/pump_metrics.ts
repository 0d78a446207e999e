import { Counter, Gauge, type Registry } from "prom-client";
import * as hdr from "hdr-histogram-js";

/** Sub-millisecond resolution where a healthy tick lives, coarse beyond where it is sick. */
export const latenessBucketsSeconds: readonly number[] = [
  0.0001,
  0.00025,
  0.0005,
  0.001,
  0.002,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
];

/**
 * One pump's tick counts as plain numbers, written by the tick and read by a scrape: the tick pays
 * for a few additions, not for a metrics library's label lookups.
 */
export class TickCounts {
  /** Ticks whose lateness fell at or below each bucket's bound (not cumulative); the last is +Inf. */
  readonly bucketCounts = new Float64Array(latenessBucketsSeconds.length + 1);
  latenessSumSeconds = 0;
  ticks = 0;
  missedTicks = 0;
  handlerErrors = 0;

  record(latenessSeconds: number, missed: number): void {
    let bucket = 0;
    while (bucket < latenessBucketsSeconds.length && latenessSeconds > latenessBucketsSeconds[bucket]!) {
      bucket++;
    }
    this.bucketCounts[bucket]! += 1;
    this.latenessSumSeconds += latenessSeconds;
    this.ticks += 1;
    this.missedTicks += missed;
  }
}

/** What a scrape reads of one pump: its counts, and the worst lateness since the last read (which resets it). */
export interface TickCountsSource {
  readonly shard: string;
  readonly tickCounts: TickCounts;
  takeLatenessMaxMs(): number;
}

/** One series of a scrape, as prom-client's registry formats it. */
interface SeriesValue {
  metricName?: string;
  labels: Record<string, string | number>;
  value: number;
}

/**
 * The lateness histogram, formatted at scrape time from the pumps' own counts. It is a metric object
 * of the registry's shape (`name`, `help`, `type`, `get`) rather than prom-client's `Histogram`, whose
 * `observe` would cost every tick a label hash.
 */
class LatenessHistogram {
  readonly name = "strata_pump_tick_lateness_seconds";
  readonly help = "How late the consensus tick fired: actual minus due fire time.";
  readonly type = "histogram";
  readonly aggregator = "sum";
  readonly labelNames = ["shard"];
  readonly #sources: ReadonlySet<TickCountsSource>;

  constructor(sources: ReadonlySet<TickCountsSource>) {
    this.#sources = sources;
  }

  get() {
    const values: SeriesValue[] = [];
    for (const source of this.#sources) values.push(...histogramSeries(this.name, source));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {}
}

function histogramSeries(name: string, source: TickCountsSource): SeriesValue[] {
  const counts = source.tickCounts;
  const shard = source.shard;
  const series: SeriesValue[] = [];
  let cumulative = 0;
  for (let i = 0; i <= latenessBucketsSeconds.length; i++) {
    cumulative += counts.bucketCounts[i]!;
    const le = i < latenessBucketsSeconds.length ? latenessBucketsSeconds[i]! : "+Inf";
    series.push({ metricName: `${name}_bucket`, labels: { le, shard }, value: cumulative });
  }
  series.push({ metricName: `${name}_sum`, labels: { shard }, value: counts.latenessSumSeconds });
  series.push({ metricName: `${name}_count`, labels: { shard }, value: counts.ticks });
  return series;
}

/** The pump metrics of one registry, read from every shard's pump at scrape time and labelled by shard. */
export class PumpMetrics {
  readonly #sources = new Set<TickCountsSource>();

  constructor(registry: Registry) {
    const sources = this.#sources;
    registry.registerMetric(new LatenessHistogram(sources) as unknown as Counter);
    const counter = (name: string, help: string, read: (counts: TickCounts) => number) =>
      new Counter({
        name,
        help,
        labelNames: ["shard"],
        registers: [registry],
        collect() {
          this.reset();
          for (const source of sources) this.inc({ shard: source.shard }, read(source.tickCounts));
        },
      });
    counter(
      "strata_pump_missed_ticks_total",
      "Ticks skipped because the loop was busy past the following one's due time.",
      (c) => c.missedTicks,
    );
    counter("strata_pump_ticks_total", "Consensus ticks fired.", (c) => c.ticks);
    counter("strata_pump_tick_handler_errors_total", "Tick handlers that threw.", (c) => c.handlerErrors);
    new Gauge({
      name: "strata_pump_tick_lateness_max_seconds",
      help: "The worst tick lateness since the previous scrape.",
      labelNames: ["shard"],
      registers: [registry],
      collect() {
        this.reset();
        for (const source of sources) {
          this.set({ shard: source.shard }, source.takeLatenessMaxMs() / 1000);
        }
      },
    });
  }

  addSource(source: TickCountsSource): void {
    this.#sources.add(source);
  }

  removeSource(source: TickCountsSource): void {
    this.#sources.delete(source);
  }
}

export interface LatencySnapshot {
  count: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
}

/** Longest latency the recorder tracks exactly; longer values are clamped to it. */
const trackableUsMax = 3_600_000_000;

/**
 * Latency percentiles at microsecond resolution, kept in an HDR histogram so that p99.9 and max
 * are exact to three significant digits whatever the sample count.
 */
export class LatencyRecorder {
  #histogram = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: trackableUsMax,
    numberOfSignificantValueDigits: 3,
    useWebAssembly: false,
  });

  recordMs(latencyMs: number): void {
    const us = Math.min(trackableUsMax, Math.max(0, Math.round(latencyMs * 1000)));
    this.#histogram.recordValue(us);
  }

  snapshot(): LatencySnapshot {
    const h = this.#histogram;
    // A percentile is reported as the top of its bucket (three significant digits), which can lie
    // just above the largest value recorded: no percentile is reported above the maximum.
    const at = (percentile: number) => Math.min(h.getValueAtPercentile(percentile), h.maxValue) / 1000;
    return {
      count: h.totalCount,
      p50Ms: at(50),
      p99Ms: at(99),
      p999Ms: at(99.9),
      maxMs: h.maxValue / 1000,
    };
  }

  reset(): void {
    this.#histogram.reset();
  }
}
