import t from "tap";
import type { DeadlineObjectStore } from "../../../src/objectstore/retrying_object_store.ts";
import { SimObjectStore } from "../../../src/objectstore/sim_object_store.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { RequestBudget } from "../../../src/tier/housekeeping/housekeeping_budget.ts";
import {
  deleteBelowWatermark,
  deletePending,
  type WatermarkDeletesDeps,
} from "../../../src/tier/housekeeping/housekeeping_deletes.ts";
import { incarnationPrefix, parseObjectKey, segmentKeys } from "../../../src/tier/bucket/object_keys.ts";
import { incOf, metric, root } from "../../helpers/housekeeping_fixture.ts";
import { tierHarness } from "../../helpers/tier_harness.ts";
import { passTime, waitFor } from "../../helpers/wait_for.ts";

// Deletions below the retention watermark: first the job on its own over the sim store, then
// through the housekeeping shell on the tier harness.

const inc = incOf("a1", 0);
const starts = [0, 10, 20, 30, 40];

/** The sim store holding the `.log` and `.index` of segments at `starts`, written at time 0. */
async function storeWithSegments(clock: VirtualClock): Promise<SimObjectStore> {
  const sim = new SimObjectStore(clock, new Rng(1));
  for (const start of starts) {
    const keys = segmentKeys(inc, start, null);
    for (const key of [keys.log, keys.index]) {
      await sim.put(key, async function* () {
        yield new Uint8Array(1);
      }, { sizeBytes: 1, metadata: {}, ifAbsent: true });
    }
  }
  return sim;
}

/** The segment starts whose objects are still in the store. */
const kept = (sim: SimObjectStore) =>
  starts.filter((start) =>
    sim.peek(segmentKeys(inc, start, null).log) || sim.peek(segmentKeys(inc, start, null).index)
  );

/** The listing job of partition 1/1/0 from `fromOffset` below `belowOffset`, queueing up to `pendingMax`. */
const listing = (fromOffset: number, belowOffset: number, pendingMax = 5000) => ({
  partition: "1/1/0",
  incarnation: "a1-0",
  fromOffset,
  belowOffset,
  pendingMax,
});

/** Runs a listing job and returns its outcome's cursor, queue and failure. */
async function listAndDelete(
  deps: WatermarkDeletesDeps,
  job: ReturnType<typeof listing>,
  budget: RequestBudget,
) {
  const outcome = await deleteBelowWatermark(deps, inc, job, budget);
  if (outcome.kind !== "delete_below") throw new Error(`Cannot read the outcome: a ${outcome.kind} outcome`);
  return {
    listedBelow: outcome.listedBelow,
    pending: outcome.pending,
    failedFromOffset: outcome.failedFromOffset,
  };
}

async function setup(config: { deleteBatchPerPass?: number } = {}) {
  const clock = new VirtualClock();
  const sim = await storeWithSegments(clock);
  clock.advance(61_000);
  const deps = {
    store: sim,
    clock,
    config: { deleteGraceMs: 60_000, deleteBatchPerPass: config.deleteBatchPerPass ?? 300 },
  };
  return { clock, sim, deps };
}

t.test("the objects of segments below the watermark are deleted in one request, and the job reports the watermark", async (t) => {
  const { sim, deps } = await setup();
  const budget = new RequestBudget(10, undefined);
  const outcome = await deleteBelowWatermark(deps, inc, listing(0, 30), budget);
  t.same(outcome, {
    kind: "delete_below",
    partition: "1/1/0",
    incarnation: "a1-0",
    listedBelow: 30,
    pending: [],
    failedFromOffset: null,
  });
  t.same(kept(sim), [30, 40], "the segments at and above the watermark are kept");
  t.equal(budget.left, 8, "one listing and one delete");
});

t.test("a batch limit, an object younger than the grace and a spent quota each stop the job where it got to", async (t) => {
  const batch = await setup({ deleteBatchPerPass: 3 });
  const batched = await listAndDelete(batch.deps, listing(0, 30), new RequestBudget(10, undefined));
  t.same(
    batched.pending.map((p) => p.startOffset),
    [10, 20, 20],
    "0's two objects and 10's .index went; 10's .log and 20's two objects are queued",
  );
  t.equal(batched.listedBelow, 30);
  t.same(kept(batch.sim), [10, 20, 30, 40]);
  const capped = await setup({ deleteBatchPerPass: 1 });
  const cut = await listAndDelete(capped.deps, listing(0, 30, 2), new RequestBudget(10, undefined));
  t.same(
    cut.pending.map((p) => p.startOffset),
    [0, 10, 10],
    "one key past pendingMax (2), for the core to cut",
  );
  t.equal(cut.listedBelow, 20, "the listing stopped at the next key");

  const young = await setup();
  const copy = segmentKeys(inc, 20, null).log;
  await young.sim.put(copy, async function* () {
    yield new Uint8Array(1);
  }, { sizeBytes: 1, metadata: {}, ifAbsent: false });
  const stopped = await listAndDelete(young.deps, listing(0, 30), new RequestBudget(10, undefined));
  t.equal(stopped.listedBelow, 20, "stopped at the young object");
  t.same(kept(young.sim), [20, 30, 40]);

  const spent = await setup();
  const budget = new RequestBudget(1, undefined);
  const none = await listAndDelete(spent.deps, listing(10, 30), budget);
  t.equal(none.listedBelow, 10, "a listing needs two requests left: none made");
  t.equal(budget.left, 1);
  t.same(kept(spent.sim), starts);
});

t.test("a batch of queued keys is deleted in one request, without a listing", async (t) => {
  const { sim, deps } = await setup();
  const keys = [0, 10].flatMap((start) => {
    const k = segmentKeys(inc, start, null);
    return [{ key: k.index, startOffset: start }, { key: k.log, startOffset: start }];
  });
  const budget = new RequestBudget(10, undefined);
  const job = { partition: "1/1/0", incarnation: "a1-0", keys };
  const outcome = await deletePending(deps, inc, job, budget);
  t.same(outcome, {
    kind: "delete_pending",
    partition: "1/1/0",
    incarnation: "a1-0",
    taken: 4,
    failedFromOffset: null,
  });
  t.same(kept(sim), [20, 30, 40]);
  t.equal(budget.left, 9, "one delete request");
  const spent = await deletePending(deps, inc, job, new RequestBudget(0, undefined));
  t.match(spent, { taken: 0 }, "a spent quota takes nothing from the queue");
});

t.test("a key that fails to delete holds the reported watermark at its segment", async (t) => {
  const { sim, deps } = await setup();
  const failing = segmentKeys(inc, 10, null).log;
  const store: DeadlineObjectStore = {
    put: (key, body, options) => sim.put(key, body, options),
    getRange: (key, start, endExclusive) => sim.getRange(key, start, endExclusive),
    streamRange: (key, start, endExclusive, sink) => sim.streamRange(key, start, endExclusive, sink),
    head: (key) => sim.head(key),
    list: (prefix, options) => sim.list(prefix, options),
    delete: async (keys) => {
      const results = await sim.delete(keys.filter((k) => k !== failing));
      const error = new Error("Cannot delete: InternalError");
      return keys.includes(failing) ? [...results, { key: failing, error }] : results;
    },
  };
  const outcome = await listAndDelete({ ...deps, store }, listing(0, 30), new RequestBudget(10, undefined));
  t.equal(outcome.failedFromOffset, 10, "the next run lists from 10 again");
  t.same(kept(sim), [10, 30, 40], "the other objects below the watermark are gone");
});

for (const pendingMax of [5000, 1]) {
  t.test(`objects below the retention watermark are deleted only after delete_grace, a batch per run, within the request quota (queue cap ${pendingMax})`, async (t) => {
    const h = await tierHarness(t, { ageMs: null, sizeBytes: 100_000 }, {
      housekeeping: {
        idleTimeoutMs: 1000,
        deleteBatchPerPass: 2,
        requestsPerRunMax: 3,
        deletePendingPerPartitionMax: pendingMax,
      },
    });
    await h.produce(40);
    await waitFor(
      "the upload of every sealed segment",
      () => h.partition.superblock.tieredUpToOffset === h.lastSealedEnd() + 1,
      h.ticks(),
    );
    await h.partition.enforceRetention((s) => s.endOffset < 20);
    const watermark = h.partition.superblock.deletedUpToOffset;
    t.ok(watermark >= 15, `retention raised the watermark to ${watermark}`);
    const prefix = incarnationPrefix(incOf(h.partition.superblock.createdRevision, 0));
    const below = h.sim.keys().filter((k) => {
      const p = parseObjectKey(root, k);
      return k.startsWith(prefix) && p.kind === "segment" && p.startOffset < watermark;
    });
    const above = h.sim.keys().filter((k) => k.startsWith(prefix) && !below.includes(k));
    t.ok(below.length >= 6, `${below.length} objects below the watermark`);
    const retiredAtMs = h.clock.nowMs();

    const goneAtMs = new Map<string, number>();
    const deletedPerCheck: number[] = [];
    let queuedMax = 0;
    const track = () => {
      queuedMax = Math.max(queuedMax, h.housekeeping!.pendingDeletions());
      let fresh = 0;
      for (const k of below) {
        if (!goneAtMs.has(k) && h.sim.peek(k) === undefined) {
          goneAtMs.set(k, h.clock.nowMs());
          fresh++;
        }
      }
      if (fresh > 0) deletedPerCheck.push(fresh);
      return goneAtMs.size === below.length;
    };
    await waitFor("every object below the watermark to be deleted", track, h.ticks(200_000));
    const first = Math.min(...goneAtMs.values());
    t.ok(
      first - retiredAtMs >= 60_000,
      `the first deletion came ${first - retiredAtMs} ms after the watermark`,
    );
    t.ok(
      deletedPerCheck.every((n) => n <= 2),
      `at most delete_batch_per_pass (2) per run: ${deletedPerCheck}`,
    );
    t.ok(above.every((k) => h.sim.peek(k) !== undefined), "objects at or above the watermark are kept");
    const runs = await metric(h.registry, /strata_housekeeping_runs_total (\d+)/);
    const requests = await metric(h.registry, /strata_housekeeping_requests_total (\d+)/);
    t.ok(runs > 0 && requests <= runs * 3, `${requests} requests in ${runs} runs: within request_quota 3`);
    t.equal(
      await metric(h.registry, /strata_housekeeping_deleted_objects_total\{reason="watermark"\} (\d+)/),
      below.length,
    );
    t.ok(queuedMax <= pendingMax, `at most ${pendingMax} keys queued (${queuedMax})`);
    if (pendingMax >= below.length) t.ok(queuedMax > 0, `the first listing queued ${queuedMax} keys`);
    t.match(
      await h.registry.metrics(),
      /strata_housekeeping_pending_deletions 0/,
      "the gauge: none left queued",
    );
  });
}

t.test("no object younger than delete_grace is deleted, even below the watermark", async (t) => {
  const h = await tierHarness(t, { ageMs: null, sizeBytes: null }, { housekeeping: { idleTimeoutMs: 1000 } });
  await h.produce(20);
  await waitFor(
    "the upload of every sealed segment",
    () => h.partition.superblock.tieredUpToOffset === h.lastSealedEnd() + 1,
    h.ticks(),
  );
  await passTime(70_000, h.ticks().pace); // 70 s: the uploaded objects are older than the grace
  await h.partition.enforceRetention((s) => s.endOffset < 10);
  const keys = segmentKeys(incOf(h.partition.superblock.createdRevision, 0), 0, null);
  // The object of the first segment is written again now, as a late duplicate upload would.
  const copy = h.sim.peek(keys.log)!;
  await h.store.put(keys.log, async function* () {
    yield copy.bytes;
  }, { sizeBytes: copy.bytes.length, metadata: copy.metadata, ifAbsent: false });
  const rewrittenAtMs = h.clock.nowMs();
  await waitFor(
    "the rewritten object to be deleted",
    () => h.sim.peek(keys.log) === undefined,
    h.ticks(200_000),
  );
  t.ok(
    h.clock.nowMs() - rewrittenAtMs >= 60_000,
    `not before it was 60 s old (${h.clock.nowMs() - rewrittenAtMs} ms)`,
  );
});

t.test("a merge's object that reaches past the watermark stays, and the listing waits at it", async (t) => {
  const { sim, deps, clock } = await setup();
  // Another replica merged 10 to 39; this one's watermark is 20.
  const merged = segmentKeys(inc, 10, 39);
  for (const key of [merged.log, merged.index]) {
    await sim.put(key, async function* () {
      yield new Uint8Array(1);
    }, { sizeBytes: 1, metadata: {}, ifAbsent: true });
  }
  clock.advance(61_000);
  const first = await listAndDelete(deps, listing(0, 20), new RequestBudget(10, undefined));
  t.same(first, { listedBelow: 10, pending: [], failedFromOffset: null }, "the cursor stays at the merge");
  t.same(kept(sim), [10, 20, 30, 40]);
  t.ok(sim.peek(merged.log) && sim.peek(merged.index), "the merge's objects stay");
  const later = await listAndDelete(deps, listing(10, 40), new RequestBudget(10, undefined));
  t.equal(later.listedBelow, 40);
  t.same(kept(sim), [40]);
  t.notOk(sim.peek(merged.log) || sim.peek(merged.index), "once the watermark passes its end, it goes");
});

t.test("a segment's producer snapshot goes with its other objects below the watermark", async (t) => {
  const { sim, deps } = await setup();
  for (const start of starts) {
    await sim.put(segmentKeys(inc, start, null).producers, async function* () {
      yield new Uint8Array(1);
    }, { sizeBytes: 1, metadata: {}, ifAbsent: true });
  }
  deps.clock.advance(61_000);
  await deleteBelowWatermark(deps, inc, listing(0, 30), new RequestBudget(10, undefined));
  t.same(
    starts.filter((start) => sim.peek(segmentKeys(inc, start, null).producers) !== undefined),
    [30, 40],
    "the snapshots of the segments below the watermark are gone, the rest kept",
  );
  t.same(kept(sim), [30, 40]);
});
