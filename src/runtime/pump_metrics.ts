import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** Sub-millisecond resolution where a healthy tick lives, coarse beyond where it is sick. */
const latenessBucketsSeconds = [
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

/** A source of "worst lateness since the last scrape" for the max gauge; reading it resets it. */
export interface LatenessMaxSource {
  readonly shard: string;
  takeLatenessMaxMs(): number;
}

/** The pump metrics of one registry, shared by every shard's pump and labelled by shard. */
export class PumpMetrics {
  readonly lateness: Histogram<"shard">;
  readonly missedTicks: Counter<"shard">;
  readonly ticks: Counter<"shard">;
  readonly handlerErrors: Counter<"shard">;
  readonly #sources = new Set<LatenessMaxSource>();

  constructor(registry: Registry) {
    this.lateness = new Histogram({
      name: "strata_pump_tick_lateness_seconds",
      help: "How late the consensus tick fired: actual minus scheduled fire time.",
      labelNames: ["shard"],
      buckets: latenessBucketsSeconds,
      registers: [registry],
    });
    this.missedTicks = new Counter({
      name: "strata_pump_missed_ticks_total",
      help: "Scheduled ticks skipped because the loop was busy past the following slot.",
      labelNames: ["shard"],
      registers: [registry],
    });
    this.ticks = new Counter({
      name: "strata_pump_ticks_total",
      help: "Consensus ticks fired.",
      labelNames: ["shard"],
      registers: [registry],
    });
    this.handlerErrors = new Counter({
      name: "strata_pump_tick_handler_errors_total",
      help: "Tick handlers that threw.",
      labelNames: ["shard"],
      registers: [registry],
    });
    const sources = this.#sources;
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

  addSource(source: LatenessMaxSource): void {
    this.#sources.add(source);
  }

  removeSource(source: LatenessMaxSource): void {
    this.#sources.delete(source);
  }
}
