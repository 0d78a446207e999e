import * as hdr from "hdr-histogram-js";

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
