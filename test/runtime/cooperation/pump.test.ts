import t from "tap";
import { createMetricsRegistry } from "../../../src/runtime/metrics/metrics.ts";
import { Logger, silentLogger } from "../../../src/runtime/logger.ts";
import { Pump } from "../../../src/runtime/cooperation/pump.ts";
import { PumpMetrics } from "../../../src/runtime/cooperation/pump_metrics.ts";
import { RealClock } from "../../../src/runtime/clock/real_clock.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { yieldToReactor } from "../../../src/runtime/cooperation/piece_gate.ts";
import { assert, AssertionError } from "../../../src/runtime/assert.ts";

function virtualPump(tickIntervalMs = 10, logger = silentLogger()) {
  const clock = new VirtualClock();
  const registry = createMetricsRegistry();
  const pump = new Pump({ clock, metrics: new PumpMetrics(registry), logger, shard: "0", tickIntervalMs });
  return { clock, registry, pump };
}

t.test("on time, every tick fires on its schedule with zero lateness", (t) => {
  const { clock, pump } = virtualPump();
  const firedAt: number[] = [];
  pump.onTick("probe", (nowMs) => firedAt.push(nowMs));
  pump.start();
  clock.advance(50);
  t.same(firedAt, [10, 20, 30, 40, 50]);
  const s = pump.snapshot();
  t.equal(s.ticks, 5);
  t.equal(s.maxMs, 0);
  t.equal(s.missedTicks, 0);
  pump.stop();
  t.end();
});

t.test("a 50 ms stall is recorded as about 50 ms of lateness, and the slots it covered as missed", async (t) => {
  const { clock, registry, pump } = virtualPump();
  pump.start();
  clock.advance(9);
  clock.stall(50); // the loop was blocked from 9 ms to 59 ms: the tick due at 10 ms fires at 59 ms
  clock.advance(0);
  const s = pump.snapshot();
  t.equal(s.ticks, 1);
  t.ok(Math.abs(s.maxMs - 49) < 0.1, `lateness ${s.maxMs} ms is the stall past the due time`);
  t.equal(s.missedTicks, 4, "the ticks due at 20, 30, 40 and 50 ms were skipped");
  clock.advance(9);
  t.equal(pump.snapshot().ticks, 1, "no burst of the skipped ticks");
  clock.advance(1);
  t.equal(pump.snapshot().ticks, 2, "the next tick is due an interval after the late one started (69 ms)");
  t.equal(pump.snapshot().maxMs, s.maxMs, "and it fires on time");
  const text = await registry.metrics();
  t.match(text, /strata_pump_tick_lateness_seconds_bucket\{le="0\.05",shard="0"\} 2/, "histogram sees it");
  t.match(text, /strata_pump_tick_lateness_max_seconds\{shard="0"\} 0\.049/, "max gauge sees it");
  t.match(text, /strata_pump_missed_ticks_total\{shard="0"\} 4/);
  const again = await registry.metrics();
  t.match(again, /strata_pump_tick_lateness_max_seconds\{shard="0"\} 0\n/, "the max resets at each scrape");
  pump.stop();
});

t.test("a throwing handler is counted and logged; the other handlers and later ticks still run", async (t) => {
  const lines: string[] = [];
  const logger = new Logger({ level: "info", sink: (l) => lines.push(l) });
  const { clock, registry, pump } = virtualPump(10, logger);
  let calls = 0;
  pump.onTick("bad", () => {
    throw new Error("boom");
  });
  pump.onTick("good", () => calls++);
  pump.start();
  clock.advance(30);
  t.equal(calls, 3);
  t.match(await registry.metrics(), /strata_pump_tick_handler_errors_total\{shard="0"\} 3/);
  t.match(lines[0]!, /"handler":"bad"/);
  t.match(lines[0]!, /"message":"boom"/);
  pump.stop();
});

t.test("a handler that breaks an assertion is logged as a bug with its stack and stops the ticks", (t) => {
  const lines: string[] = [];
  const logger = new Logger({ level: "info", sink: (l) => lines.push(l) });
  const { clock, pump } = virtualPump(10, logger);
  let calls = 0;
  pump.onTick("bad", () => {
    calls++;
    assert(calls > 1, "the first tick is never the bad one");
  });
  pump.start();
  t.throws(() => clock.advance(10), AssertionError, "the bug leaves the tick, as it would leave the timer");
  const logged = JSON.parse(lines[0]!);
  t.match(logged, {
    level: "error",
    msg: "bug: a tick handler threw; the process stops",
    shard: "0",
    handler: "bad",
    error: { name: "AssertionError", stack: /Assertion failed: the first tick[^\n]*\n\s+at /m },
  });
  t.equal(calls, 1, "run once, never again within that tick");
  pump.stop();
  t.end();
});

t.test("handler registration is unique and bounded; unregistering stops calls", (t) => {
  const clock = new VirtualClock();
  const pump = new Pump({
    clock,
    metrics: new PumpMetrics(createMetricsRegistry()),
    logger: silentLogger(),
    shard: "0",
    tickIntervalMs: 10,
    handlersMax: 2,
  });
  let calls = 0;
  const off = pump.onTick("a", () => calls++);
  t.throws(() => pump.onTick("a", () => {}), /already registered/);
  pump.onTick("b", () => {});
  t.throws(() => pump.onTick("c", () => {}), /2 handlers already registered/);
  pump.start();
  clock.advance(10);
  off();
  clock.advance(10);
  t.equal(calls, 1);
  pump.stop();
  clock.advance(100);
  t.equal(pump.snapshot().ticks, 2, "a stopped pump fires no more ticks");
  t.end();
});

t.test("with the real clock, a busy-but-yielding loop keeps ticks within a few ms", async (t) => {
  const clock = new RealClock();
  const pump = new Pump({
    clock,
    metrics: new PumpMetrics(createMetricsRegistry()),
    logger: silentLogger(),
    shard: "0",
    tickIntervalMs: 5,
  });
  pump.start();
  t.teardown(() => pump.stop());
  const endMs = clock.nowMs() + 300;
  while (clock.nowMs() < endMs) {
    const pieceEnd = clock.nowMs() + 1;
    while (clock.nowMs() < pieceEnd) { /* one 1 ms piece of CPU work */ }
    await yieldToReactor();
  }
  pump.stop();
  const s = pump.snapshot();
  // Without the yields no tick could fire until the loop ended (one at most). The bounds are wide
  // because the suite shares two cores with other test files; the point is ticks are not starved.
  t.ok(s.ticks >= 10, `${s.ticks} ticks fired in 300 ms of busy work (at most 60 possible)`);
  t.ok(s.p50Ms < 25, `median lateness ${s.p50Ms} ms`);
});
