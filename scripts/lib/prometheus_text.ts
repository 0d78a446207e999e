import { assert } from "../../src/runtime/assert.ts";

/** One sample of Prometheus text exposition: `name{label="value",...} value`. */
export interface PrometheusSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** One cumulative histogram bucket: how many observations were at most `le` (Infinity for `+Inf`). */
export interface HistogramBucket {
  le: number;
  count: number;
}

const samplePattern = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const labelPattern = /([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The samples of a Prometheus text page; comments and blank lines are skipped, anything else refused. */
export function parsePrometheusText(text: string): PrometheusSample[] {
  const samples: PrometheusSample[] = [];
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    const match = samplePattern.exec(trimmed);
    if (match === null) throw new Error(`Cannot read Prometheus text: a line is not a sample: ${trimmed}`);
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? "").matchAll(labelPattern)) labels[label[1]!] = label[2]!;
    samples.push({ name: match[1]!, labels, value: parseValue(match[3]!) });
  }
  return samples;
}

function parseValue(text: string): number {
  if (text === "+Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  const value = Number(text);
  if (Number.isNaN(value) && text !== "NaN") {
    throw new Error(`Cannot read Prometheus text: ${JSON.stringify(text)} is not a number`);
  }
  return value;
}

const matches = (sample: PrometheusSample, labels: Record<string, string>) =>
  Object.entries(labels).every(([key, value]) => sample.labels[key] === value);

/** The value of the one sample named `name` with these labels; null when there is none. */
export function sampleValue(
  samples: readonly PrometheusSample[],
  name: string,
  labels: Record<string, string> = {},
): number | null {
  const found = samples.filter((s) => s.name === name && matches(s, labels));
  assert(found.length <= 1, `Cannot read ${name}: ${found.length} samples match ${JSON.stringify(labels)}`);
  return found[0]?.value ?? null;
}

/** A histogram's cumulative buckets (`<name>_bucket`) with these labels, by ascending `le`. */
export function histogramBuckets(
  samples: readonly PrometheusSample[],
  name: string,
  labels: Record<string, string> = {},
): HistogramBucket[] {
  const buckets = samples
    .filter((s) => s.name === `${name}_bucket` && matches(s, labels) && s.labels["le"] !== undefined)
    .map((s) => ({ le: parseValue(s.labels["le"]!), count: s.value }))
    .sort((a, b) => a.le - b.le);
  if (buckets.length === 0) throw new Error(`Cannot read histogram ${name}: no buckets`);
  assert(buckets.at(-1)!.le === Infinity, `Cannot read histogram ${name}: no +Inf bucket`);
  return buckets;
}

/** The observations between two readings of one histogram: each bucket's growth. */
export function bucketGrowth(
  start: readonly HistogramBucket[],
  end: readonly HistogramBucket[],
): HistogramBucket[] {
  assert(
    start.length === end.length && start.every((b, i) => b.le === end[i]!.le),
    "Cannot subtract histograms: their buckets differ",
  );
  return end.map((b, i) => {
    const count = b.count - start[i]!.count;
    assert(count >= 0, `Cannot subtract histograms: bucket le=${b.le} shrank`);
    return { le: b.le, count };
  });
}

/** An estimate of quantile `q` from cumulative buckets, and the upper bound of the bucket it lies in. */
export interface QuantileEstimate {
  /** Interpolated linearly within the bucket, as Prometheus's `histogram_quantile` does. */
  estimate: number;
  /** The top of the bucket holding the quantile (the largest finite bound when it lies above them). */
  bucketUpper: number;
}

/** Quantile `q` (0 to 1) of cumulative buckets; null when they hold no observation. */
export function histogramQuantile(q: number, buckets: readonly HistogramBucket[]): QuantileEstimate | null {
  assert(q >= 0 && q <= 1, `Cannot estimate quantile ${q}: not between 0 and 1`);
  const total = buckets.at(-1)?.count ?? 0;
  if (total === 0) return null;
  const rank = q * total;
  const at = buckets.findIndex((b) => b.count >= rank);
  const finiteTop = buckets.at(-2)?.le ?? 0;
  if (buckets[at]!.le === Infinity) return { estimate: finiteTop, bucketUpper: finiteTop };
  const lower = at === 0 ? 0 : buckets[at - 1]!.le;
  const below = at === 0 ? 0 : buckets[at - 1]!.count;
  const upper = buckets[at]!.le;
  const inBucket = buckets[at]!.count - below;
  const estimate = inBucket === 0 ? upper : lower + (upper - lower) * ((rank - below) / inBucket);
  return { estimate, bucketUpper: upper };
}
