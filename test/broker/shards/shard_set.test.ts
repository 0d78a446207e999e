import t from "tap";
import { ShardRuntime, ShardSet } from "../../../src/broker/shards/shard_runtime.ts";
import { silentLogger } from "../../../src/runtime/logger.ts";
import { createMetricsRegistry } from "../../../src/runtime/metrics/metrics.ts";
import { PieceGate } from "../../../src/runtime/cooperation/piece_gate.ts";
import { Pump } from "../../../src/runtime/cooperation/pump.ts";
import { PumpMetrics } from "../../../src/runtime/cooperation/pump_metrics.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";

type Step = "housekeeping" | "control log" | "cache";

/** A shard that records each shutdown step it is asked for and fails the steps it is told to. */
class RecordingShard extends ShardRuntime {
  readonly #steps: string[];
  readonly #failing: readonly Step[];

  constructor(id: number, steps: string[], failing: readonly Step[] = []) {
    const clock = new VirtualClock();
    const logger = silentLogger();
    const pump = new Pump({
      clock,
      metrics: new PumpMetrics(createMetricsRegistry()),
      logger,
      shard: String(id),
      tickIntervalMs: 10,
    });
    super({ id, pump, logger, pieceGate: new PieceGate(), clock, tiering: null });
    this.#steps = steps;
    this.#failing = failing;
  }

  override stopHousekeeping(): Promise<void> {
    return this.#step("housekeeping");
  }

  override closeControlLog(): Promise<void> {
    return this.#step("control log");
  }

  override closeCache(): Promise<void> {
    return this.#step("cache");
  }

  #step(step: Step): Promise<void> {
    this.#steps.push(`${this.id} ${step}`);
    if (this.#failing.includes(step)) {
      return Promise.reject(new Error(`Cannot close shard ${this.id}'s ${step}`));
    }
    return Promise.resolve();
  }
}

const everyStep = [
  "0 housekeeping",
  "1 housekeeping",
  "0 control log",
  "1 control log",
  "0 cache",
  "1 cache",
];

t.test("closing takes each step on every shard before the next", async (t) => {
  const steps: string[] = [];
  await new ShardSet([new RecordingShard(0, steps), new RecordingShard(1, steps)]).close();
  t.same(steps, everyStep);
});

t.test("a shard that fails a step does not stop the others closing; its failure is thrown after", async (t) => {
  const steps: string[] = [];
  const one = await new ShardSet([
    new RecordingShard(0, steps, ["housekeeping"]),
    new RecordingShard(1, steps),
  ])
    .close().catch((e) => e);
  t.same(steps, everyStep, "every step ran on every shard");
  t.same(one, new Error("Cannot close shard 0's housekeeping"), "one failure is thrown as it is");

  steps.length = 0;
  const shards = [new RecordingShard(0, steps, ["control log"]), new RecordingShard(1, steps, ["cache"])];
  const both = await new ShardSet(shards).close().catch((e) => e);
  t.same(steps, everyStep);
  t.ok(both instanceof AggregateError, "more failures are thrown together");
  t.equal(both.message, "Cannot close the shards: 2 steps failed");
  t.same(
    both.errors.map((e: Error) => e.message),
    ["Cannot close shard 0's control log", "Cannot close shard 1's cache"],
  );
});
