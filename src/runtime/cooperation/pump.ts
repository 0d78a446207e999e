import { assert, rethrowBug } from "../assert.ts";
import type { Cancel, Clock } from "../clock/clock.ts";
import {
  LatencyRecorder,
  type LatencySnapshot,
  type PumpMetrics,
  TickCounts,
  type TickCountsSource,
} from "./pump_metrics.ts";
import type { Logger } from "../logger.ts";

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
 * A shard's loop. It fires the consensus tick every interval, from one repeating timer, and gauges
 * how late each tick fires against its due time (one interval after the previous tick fired): the
 * lateness is the project's main health signal, since every synchronous stretch anywhere on the
 * event loop shows up in it. When the loop was blocked past whole intervals, those ticks are counted
 * as missed rather than fired in a burst.
 */
export class Pump implements TickCountsSource {
  readonly shard: string;
  readonly tickIntervalMs: number;
  readonly #clock: Clock;
  readonly #metrics: PumpMetrics;
  readonly #logger: Logger;
  readonly #handlersMax: number;
  readonly #handlers = new Map<string, TickHandler>();
  readonly #recorder = new LatencyRecorder();
  readonly tickCounts = new TickCounts();
  #cancel: Cancel | null = null;
  #dueMs = 0;
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
    this.#dueMs = this.#clock.nowMs() + this.tickIntervalMs;
    this.#cancel = this.#clock.every(this.tickIntervalMs, () => this.#fire());
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

  #fire(): void {
    const nowMs = this.#clock.nowMs();
    const latenessMs = Math.max(0, nowMs - this.#dueMs);
    const missed = Math.floor(latenessMs / this.tickIntervalMs);
    // The repeating timer arms the next tick one interval after this one started.
    this.#dueMs = nowMs + this.tickIntervalMs;
    this.#record(nowMs - latenessMs, latenessMs, missed);
    this.#runHandlers(nowMs);
  }

  #record(dueMs: number, latenessMs: number, missed: number): void {
    this.#ticks++;
    this.#missedTicks += missed;
    this.#recorder.recordMs(latenessMs);
    this.#latenessMaxSinceTakeMs = Math.max(this.#latenessMaxSinceTakeMs, latenessMs);
    this.#latenessObserver?.(dueMs, latenessMs);
    this.tickCounts.record(latenessMs / 1000, missed);
  }

  #runHandlers(nowMs: number): void {
    for (const [name, handler] of this.#handlers) {
      try {
        handler(nowMs);
      } catch (error) {
        this.tickCounts.handlerErrors += 1;
        rethrowBug(error, this.#logger, "a tick handler threw; the process stops", {
          shard: this.shard,
          handler: name,
        });
        this.#logger.error("tick handler failed", { shard: this.shard, handler: name, error });
      }
    }
  }
}
