import { Gauge } from "prom-client";
import { memoryUsage } from "node:process";
import type { Config } from "../config/config.ts";
import type { Clock } from "../runtime/clock.ts";
import type { Disk } from "../runtime/disk.ts";
import type { Logger } from "../runtime/logger.ts";
import { createMetricsRegistry, type Registry } from "../runtime/metrics.ts";
import { Pump } from "../runtime/pump.ts";
import { PumpMetrics } from "../runtime/pump_metrics.ts";
import { createHttpHandler, type FetchHandler } from "./http_handler.ts";

export interface ServerDeps {
  config: Config;
  logger: Logger;
  clock: Clock;
  disk: Disk;
  registry?: Registry;
}

/**
 * The server without its socket: the data directory, the shards' pumps, the metrics registry and
 * the fetch handler. Runtime-neutral, so tests run it under Node and `main.ts` serves it on Deno.
 */
export class StrataServer {
  readonly handler: FetchHandler;
  readonly registry: Registry;
  readonly pumps: readonly Pump[];
  readonly #logger: Logger;
  #closed = false;

  private constructor(registry: Registry, pumps: Pump[], logger: Logger) {
    this.registry = registry;
    this.pumps = pumps;
    this.#logger = logger;
    this.handler = createHttpHandler({ registry, pumps });
  }

  static async open(deps: ServerDeps): Promise<StrataServer> {
    const { config, logger, clock, disk } = deps;
    await disk.mkdirp(config.system.path);
    const registry = deps.registry ?? createMetricsRegistry();
    registerProcessMetrics(registry);
    const pumpMetrics = new PumpMetrics(registry);
    const pump = new Pump({
      clock,
      metrics: pumpMetrics,
      logger: logger.child({ shard: "0" }),
      shard: "0",
      tickIntervalMs: config.system.tickIntervalMs,
    });
    pump.start();
    logger.info("server opened", {
      data_path: config.system.path,
      tick_interval_ms: config.system.tickIntervalMs,
    });
    return new StrataServer(registry, [pump], logger);
  }

  /** Stops the pumps. Idempotent, so a second signal during shutdown does no harm. */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    for (const pump of this.pumps) pump.stop();
    this.#logger.info("server closed");
    return Promise.resolve();
  }
}

function registerProcessMetrics(registry: Registry): void {
  new Gauge({
    name: "strata_process_resident_memory_bytes",
    help: "Resident set size of the server process.",
    registers: [registry],
    collect() {
      this.set(memoryUsage.rss());
    },
  });
}
