import { assert } from "./assert.ts";
import type { Cancel, Clock } from "./clock.ts";
import { LatencyRecorder, type LatencySnapshot } from "./latency_recorder.ts";
import type { Logger } from "./logger.ts";
import type { LatenessMaxSource, PumpMetrics } from "./pump_metrics.ts";

/** A periodic duty run from the tick. It must be quick: long work is started, not done, here. */
export type TickHandler = (nowMs: number) => void;

export interface PumpOptions {
  clock: Clock;
  metrics: PumpMetrics;
  logger: Logger;
  shard: string;
  tickIntervalMs: number;
  /** Bound on registered handlers; a leak of registrations fails loudly instead of slowing ticks. */
  handlersMax?: number;
}

export interface PumpSnapshot extends LatencySnapshot {
  ticks: number;
  missedTicks: number;
}

/**
 * A shard's loop. It fires the consensus tick on a fixed schedule (start + k × interval) and
 * gauges how late each tick fires: the lateness is the project's main health signal, since every
 * synchronous stretch anywhere on the event loop shows up in it. When the loop was blocked past
 * whole slots, those slots are counted as missed rather than fired in a burst.
 */
export class Pump implements LatenessMaxSource {
  readonly shard: string;
  readonly tickIntervalMs: number;
  readonly #clock: Clock;
  readonly #metrics: PumpMetrics;
  readonly #logger: Logger;
  readonly #handlersMax: number;
  readonly #handlers = new Map<string, TickHandler>();
  readonly #recorder = new LatencyRecorder();
  #cancel: Cancel | null = null;
  #scheduledMs = 0;
  #ticks = 0;
  #missedTicks = 0;
  #latenessMaxSinceTakeMs = 0;
  #latenessObserver: ((atMs: number, latenessMs: number) => void) | null = null;

  constructor(options: PumpOptions) {
    assert(options.tickIntervalMs > 0, "Pump tick interval must be positive");
    this.shard = options.shard;
    this.tickIntervalMs = options.tickIntervalMs;
    this.#clock = options.clock;
    this.#metrics = options.metrics;
    this.#logger = options.logger;
    this.#handlersMax = options.handlersMax ?? 64;
  }

  get running(): boolean {
    return this.#cancel !== null;
  }

  /** Registers a duty under a unique name; returns a function that unregisters it. */
  onTick(name: string, handler: TickHandler): () => void {
    assert(!this.#handlers.has(name), `Cannot register tick handler ${name}: already registered`);
    assert(
      this.#handlers.size < this.#handlersMax,
      `Cannot register tick handler ${name}: ${this.#handlersMax} handlers already registered`,
    );
    this.#handlers.set(name, handler);
    return () => this.#handlers.delete(name);
  }

  start(): void {
    assert(!this.running, "Cannot start the pump: it is already running");
    this.#metrics.addSource(this);
    this.#scheduledMs = this.#clock.nowMs() + this.tickIntervalMs;
    this.#arm();
  }

  stop(): void {
    this.#cancel?.();
    this.#cancel = null;
    this.#metrics.removeSource(this);
  }

  /** Lateness percentiles since start (or the last `resetSnapshot`), for tests and benchmarks. */
  snapshot(): PumpSnapshot {
    return { ...this.#recorder.snapshot(), ticks: this.#ticks, missedTicks: this.#missedTicks };
  }

  resetSnapshot(): void {
    this.#recorder.reset();
    this.#ticks = 0;
    this.#missedTicks = 0;
  }

  /** One observer of every tick's lateness, for the benchmark's time series; null removes it. */
  observeLateness(observer: ((atMs: number, latenessMs: number) => void) | null): void {
    this.#latenessObserver = observer;
  }

  takeLatenessMaxMs(): number {
    const max = this.#latenessMaxSinceTakeMs;
    this.#latenessMaxSinceTakeMs = 0;
    return max;
  }

  #arm(): void {
    const delayMs = Math.max(0, this.#scheduledMs - this.#clock.nowMs());
    this.#cancel = this.#clock.schedule(delayMs, () => this.#fire());
  }

  #fire(): void {
    const nowMs = this.#clock.nowMs();
    const latenessMs = Math.max(0, nowMs - this.#scheduledMs);
    const missed = Math.floor(latenessMs / this.tickIntervalMs);
    this.#record(latenessMs, missed);
    this.#runHandlers(nowMs);
    // The handlers may have stopped the pump.
    if (this.#cancel === null) return;
    this.#scheduledMs += (missed + 1) * this.tickIntervalMs;
    this.#arm();
  }

  #record(latenessMs: number, missed: number): void {
    this.#ticks++;
    this.#missedTicks += missed;
    this.#recorder.recordMs(latenessMs);
    this.#latenessMaxSinceTakeMs = Math.max(this.#latenessMaxSinceTakeMs, latenessMs);
    this.#latenessObserver?.(this.#scheduledMs, latenessMs);
    const labels = { shard: this.shard };
    this.#metrics.lateness.observe(labels, latenessMs / 1000);
    this.#metrics.ticks.inc(labels);
    if (missed > 0) this.#metrics.missedTicks.inc(labels, missed);
  }

  #runHandlers(nowMs: number): void {
    for (const [name, handler] of this.#handlers) {
      try {
        handler(nowMs);
      } catch (error) {
        this.#metrics.handlerErrors.inc({ shard: this.shard });
        this.#logger.error("tick handler failed", { shard: this.shard, handler: name, error });
      }
    }
  }
}
