import t from "tap";
import { createMetricsRegistry } from "../../src/runtime/metrics/metrics.ts";
import { ObjectStoreMetrics } from "../../src/objectstore/object_store_metrics.ts";
import {
  AuthError,
  MalformedError,
  NotFoundError,
  ThrottledError,
  TransportError,
} from "../../src/objectstore/object_store_errors.ts";
import { defaultRetryProfiles } from "../../src/objectstore/retry_policy.ts";
import { RetryingObjectStore } from "../../src/objectstore/retrying_object_store.ts";
import { type SimFaults, SimObjectStore } from "../../src/objectstore/sim_object_store.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { AssertionError } from "../../src/runtime/assert.ts";
import type { ObjectStore } from "../../src/objectstore/object_store.ts";
import { bodyOf } from "../helpers/object_store_contract.ts";
import { runVirtual } from "../helpers/run_virtual.ts";
import { WatchedClock } from "../helpers/watched_clock.ts";

await initCrc32c();

function setup(faults: SimFaults, seed = 1) {
  const clock = new WatchedClock();
  const sim = new SimObjectStore(clock, new Rng(seed), faults);
  const registry = createMetricsRegistry();
  const store = new RetryingObjectStore(sim, clock, new Rng(seed + 100), defaultRetryProfiles, {
    putMs: 90_000,
    getMs: 5_000,
    otherMs: 30_000,
  }, new ObjectStoreMetrics(registry));
  const put = (key: string, options: { deadlineAtMs?: number } = {}) =>
    store.put(key, bodyOf(new Uint8Array([1, 2, 3])), {
      sizeBytes: 3,
      metadata: {},
      ifAbsent: false,
      ...options,
    });
  return { clock, sim, store, registry, put };
}

/** Times (ms) at which the sim store saw attempts of `op`. */
const attemptTimes = (sim: SimObjectStore, op: "put" | "get" | "head") =>
  sim.records.filter((r) => r.op === op).map((r) => r.atMs);

t.test("a transient error is retried at once, then with growing backoff, until it succeeds", async (t) => {
  const { clock, sim, put, registry } = setup({ outages: [{ fromMs: 0, toMs: 100 }] });
  await runVirtual(clock, put("k"));
  const times = attemptTimes(sim, "put");
  t.equal(times[0], 0);
  t.equal(times[1], 0, "the first retry is immediate");
  const gaps = times.slice(2).map((x, i) => x - times[i + 1]!);
  t.ok(
    gaps.every((g, i) => g >= 10 * 2 ** i / 2 && g <= 10 * 2 ** i),
    `gaps ${gaps} follow 10 ms × 2^n with equal jitter`,
  );
  t.ok(times.at(-1)! >= 100, "it succeeded once the outage ended");
  t.ok(sim.peek("k"), "the object exists");
  t.match(await registry.metrics(), /strata_objectstore_retries_total\{op="put",profile="transient"\} \d+/);
});

t.test("a non-transient error is retried from 1 s, growing towards 30 s, and never skipped", async (t) => {
  const { clock, sim, put, registry } = setup({ errorRates: { put: { nonTransient: 1 } } });
  const failing = put("k", { deadlineAtMs: 40_000 });
  const error = await runVirtual(clock, failing).catch((e) => e);
  t.ok(error instanceof MalformedError, "after the deadline the last error surfaces");
  const times = attemptTimes(sim, "put");
  const gaps = times.slice(1).map((x, i) => x - times[i]!);
  t.ok(gaps[0]! >= 500 && gaps[0]! <= 1000, `first gap ${gaps[0]} ms within [0.5 s, 1 s]`);
  t.ok(gaps[1]! >= 1000 && gaps[1]! <= 2000, `second gap ${gaps[1]} ms within [1 s, 2 s]`);
  t.ok(times.at(-1)! < 40_000, "no attempt started after the deadline");
  t.match(await registry.metrics(), /strata_objectstore_errors_total\{op="put",class="fail"\} \d+/);
});

t.test("not found and auth are answers: one attempt, no retry", async (t) => {
  const missing = setup({});
  const error = await runVirtual(missing.clock, missing.store.getRange("nope", 0, 1)).catch((e) => e);
  t.ok(error instanceof NotFoundError);
  t.equal(missing.sim.count("get"), 1);
  const denied = setup({ errorRates: { head: { auth: 1 } } });
  const authError = await runVirtual(denied.clock, denied.store.head("k")).catch((e) => e);
  t.ok(authError instanceof AuthError);
  t.equal(denied.sim.count("head"), 1);
  t.match(await denied.registry.metrics(), /strata_objectstore_responses_total\{op="head",status="403"\} 1/);
});

t.test("a bug in a backend is never retried: one attempt, and the assertion itself surfaces", async (t) => {
  const clock = new WatchedClock();
  const sim = new SimObjectStore(clock, new Rng(1));
  let attempts = 0;
  const buggy: ObjectStore = Object.create(sim);
  buggy.put = () => {
    attempts++;
    throw new AssertionError("Assertion failed: a body of a known size");
  };
  const store = new RetryingObjectStore(buggy, clock, new Rng(2), defaultRetryProfiles, {
    putMs: 90_000,
    getMs: 5_000,
    otherMs: 30_000,
  }, null);
  const put = store.put("k", bodyOf(new Uint8Array([1])), { sizeBytes: 1, metadata: {}, ifAbsent: false });
  const error = await runVirtual(clock, put).catch((e) => e);
  t.ok(error instanceof AssertionError, `the assertion, not a wrapper: ${error}`);
  t.equal(attempts, 1, "one attempt: a bug is not a failure to try again");
});

t.test("throttling backs off instead of hammering the store", async (t) => {
  const { clock, sim, put } = setup({ errorRates: { put: { throttle: 0.8 } } }, 7);
  await runVirtual(clock, put("k"));
  const times = attemptTimes(sim, "put");
  t.ok(times.length > 2, `${times.length} attempts`);
  const gaps = times.slice(2).map((x, i) => x - times[i + 1]!);
  t.ok(gaps.every((g) => g >= 5), `every later retry waited (${gaps.join(", ")} ms)`);
  t.ok(sim.peek("k"));
});

t.test("deadlines: each attempt gets the time left; a retry needs time before the deadline", async (t) => {
  const { clock, sim, store } = setup({
    latencyMs: { min: 2_000, max: 2_000 },
    errorRates: { get: { transient: 1 } },
  });
  await runVirtual(
    clock,
    store.put("k", bodyOf(new Uint8Array([1])), { sizeBytes: 1, metadata: {}, ifAbsent: false }),
  );
  const startedMs = clock.nowMs();
  const error = await runVirtual(clock, store.getRange("k", 0, 1)).catch((e) => e);
  t.ok(error instanceof TransportError);
  t.ok(
    clock.nowMs() - startedMs <= 5_000 + 2_000,
    `gave up ${clock.nowMs() - startedMs} ms after starting (fetch deadline 5 s)`,
  );
  t.ok(sim.count("get") >= 2 && sim.count("get") <= 3, `${sim.count("get")} attempts fit in 5 s at 2 s each`);
});

t.test("a lost reply surfaces as a timeout at the attempt's deadline, then the retry succeeds", async (t) => {
  const { clock, sim, store } = setup({ errorRates: { head: { lostReply: 1 } } });
  const pending = store.head("k", { deadlineAtMs: 1_000 });
  const error = await runVirtual(clock, pending).catch((e) => e);
  t.ok(error instanceof TransportError, "the caller hears a timeout");
  t.match(error.message, /timed out/);
  t.equal(clock.nowMs(), 1_000, "exactly at the deadline");
  t.equal(sim.records[0]!.outcome, "lost", "the store did the work but the reply was lost");
  sim.faults = { errorRates: { put: { lostReply: 0.5 } } };
  await runVirtual(
    clock,
    store.put("x", bodyOf(new Uint8Array([9])), { sizeBytes: 1, metadata: {}, ifAbsent: false }),
  );
  t.ok(sim.peek("x"), "a put whose reply was lost is retried until one is heard");
});

t.test("the same seed gives the same attempts: faults replay exactly", async (t) => {
  const run = async () => {
    const { clock, sim, put } = setup({
      errorRates: { put: { transient: 0.5, throttle: 0.2 } },
      latencyMs: { min: 1, max: 50 },
    }, 42);
    for (let i = 0; i < 20; i++) await runVirtual(clock, put(`k${i}`));
    return JSON.stringify(sim.records);
  };
  t.equal(await run(), await run());
});

t.test("a sim outage window and a throttled answer carry the right classes", async (t) => {
  const { clock, sim } = setup({ outages: [{ fromMs: 0, toMs: 10 }] });
  const outage = await runVirtual(clock, sim.head("k")).catch((e) => e);
  t.ok(outage instanceof TransportError);
  const throttled = setup({ errorRates: { list: { throttle: 1 } } });
  const slowDown = await runVirtual(throttled.clock, throttled.sim.list("")).catch((e) => e);
  t.ok(slowDown instanceof ThrottledError);
  t.equal(slowDown.status, 503);
});

t.test("a stream that fails part-way is streamed again from position 0, and the bytes land where they belong", async (t) => {
  const clock = new WatchedClock();
  const sim = new SimObjectStore(clock, new Rng(1));
  const bytes = new Uint8Array(3 * 1024 * 1024).map((_, i) => (i * 7) & 0xff);
  await runVirtual(
    clock,
    sim.put("k", bodyOf(bytes), { sizeBytes: bytes.length, metadata: {}, ifAbsent: false }),
  );
  // A store whose first stream breaks after its first piece, as a connection reset would.
  let attempts = 0;
  const flaky = Object.create(sim) as SimObjectStore;
  flaky.streamRange = async (key, start, end, onPiece, options) => {
    attempts++;
    if (attempts > 1) return sim.streamRange(key, start, end, onPiece, options);
    const first = (await sim.getRange(key, start, end))[0]!;
    await onPiece(first, 0);
    throw new TransportError("Cannot get k: connection reset");
  };
  const store = new RetryingObjectStore(flaky, clock, new Rng(2), defaultRetryProfiles, {
    putMs: 90_000,
    getMs: 5_000,
    otherMs: 30_000,
  }, null);
  const file = new Uint8Array(bytes.length);
  const positions: number[] = [];
  const count = await runVirtual(
    clock,
    store.streamRange("k", 0, bytes.length, (piece, position) => {
      positions.push(position);
      file.set(piece, position);
      return Promise.resolve();
    }),
  );
  t.equal(attempts, 2, "retried once");
  t.same(positions, [0, 0, 1024 * 1024, 2 * 1024 * 1024], "the retry started over at position 0");
  t.equal(count, bytes.length, "the byte count of the attempt that succeeded");
  t.ok(Buffer.compare(file, bytes) === 0, "the bytes where they belong");
});
