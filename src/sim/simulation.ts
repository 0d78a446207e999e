import type { LogConfig } from "../log/log_config.ts";
import { Partition } from "../log/partition.ts";
import { RemoteCorruptError, RemoteDataLossError } from "../log/remote_reader.ts";
import { RetryingObjectStore } from "../objectstore/retrying_object_store.ts";
import { defaultRetryProfiles } from "../objectstore/retry_policy.ts";
import { SimObjectStore } from "../objectstore/sim_object_store.ts";
import { silentLogger } from "../runtime/logger.ts";
import { Rng } from "../runtime/rng.ts";
import { Semaphore } from "../runtime/semaphore.ts";
import { TokenBucket } from "../runtime/token_bucket.ts";
import { VirtualClock } from "../runtime/virtual_clock.ts";
import { ChunkCache } from "../tier/chunk_cache.ts";
import { LocalControlLog } from "../tier/control_log.ts";
import { TierRemoteReader } from "../tier/tier_remote_reader.ts";
import { TierService } from "../tier/tier_service.ts";
import * as inv from "./invariants.ts";
import type { Scenario } from "./scenarios.ts";
import { SimDisk } from "./sim_disk.ts";
import { Trace } from "./trace.ts";

export interface SimOptions {
  seed: number;
  scenario: Scenario;
  /** Steps of the workload; each is a produce, a poll, or 10 ms of virtual time. */
  steps: number;
  /** Only for testing the simulator itself: a disk whose fsync does nothing, so data must be lost. */
  lyingFsync?: boolean;
}

export interface SimResult {
  seed: number;
  scenario: string;
  ok: boolean;
  /** The first violated invariant, when one was. */
  violation: string | null;
  trail: readonly string[];
  traceHash: string;
  events: number;
  acknowledged: number;
  crashes: number;
  floor: number;
}

const address = { streamId: 1, topicId: 1, partitionId: 0 };
const dataPath = "/data";
const logConfig: LogConfig = {
  segmentSizeBytes: 32 * 1024,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 1024,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 1000,
};
const payloadBytes = 700;
/** Virtual time after the faults stop in which uploads must catch up (liveness). */
const recoveryMs = 120_000;
const stepMs = 10;

/** The process under test: a partition, its tier service, control log and chunk cache. */
interface World {
  partition: Partition;
  tier: TierService;
  control: LocalControlLog;
  cache: ChunkCache;
}

/**
 * One deterministic run: one seed decides the workload, the store's faults and latencies, and what
 * every crash keeps. The real log, tier service and chunk cache run on a `SimDisk`, the `sim` object
 * store and a `VirtualClock`; invariants are checked after every step and at the end.
 */
export async function runSimulation(o: SimOptions): Promise<SimResult> {
  const workload = new Rng(o.seed * 4 + 1);
  const clock = new VirtualClock();
  const disk = new SimDisk(new Rng(o.seed * 4 + 2), { lyingFsync: o.lyingFsync ?? false });
  const sim = new SimObjectStore(clock, new Rng(o.seed * 4 + 3));
  const store = new RetryingObjectStore(sim, clock, new Rng(o.seed * 4 + 4), defaultRetryProfiles, {
    putMs: 90_000,
    getMs: 5000,
    otherMs: 30_000,
  }, null);
  const trace = new Trace();
  const activeUntilMs = o.steps * stepMs * 0.7;
  sim.faults = o.scenario.faults(new Rng(o.seed * 4 + 5), activeUntilMs);
  let acknowledgedBelow = 0;
  let crashes = 0;
  let floorSeen = 0;
  let violation: string | null = null;
  const fail = (what: string | null) => {
    if (what !== null && violation === null) {
      violation = what;
      trace.record(clock.nowMs(), `VIOLATION ${what}`);
    }
  };

  await disk.mkdirp(dataPath);
  const first = await Partition.create(disk, clock, new Rng(o.seed), dataPath, address, logConfig);
  let world = await openWorld(first);
  /** Appends are assigned offsets in call order: the next one's base, known before it resolves. */
  let nextAssign = world.partition.log.nextOffset;

  async function openWorld(partition: Partition): Promise<World> {
    const tier = new TierService({
      clock,
      rng: new Rng(o.seed * 4 + 6 + crashes),
      logger: silentLogger(),
      disk,
      store,
      bandwidth: new TokenBucket(clock, { rateBytesPerSec: "unlimited", waitersMax: 100, name: "upload" }),
      config: {
        prefix: "strata",
        clusterId: "sim",
        uploadConcurrency: 2,
        uploadPieceBytes: 8 * 1024,
        uploadLoopBackoffMaxMs: 1000,
        segmentUploadTimeoutMs: 10_000,
        retry: defaultRetryProfiles,
      },
    });
    tier.addPartition({
      key: "1/1/0",
      partition,
      tiered: () => true,
      envelope: () => ({ ageMs: null, sizeBytes: 64 * 1024 }),
    });
    const control = await LocalControlLog.open(
      disk,
      `${dataPath}/control/shard-0.log`,
      (_i, c) => tier.applyFloor(c),
    );
    tier.attachControlLog(control);
    const cache = await ChunkCache.open({
      disk,
      store,
      clock,
      logger: silentLogger(),
      dir: "/cache",
      config: { budgetBytes: 256 * 1024, objectsMax: 64, lowWatermarkPercent: 80, trimMinIntervalMs: 1000 },
      fetchTimeoutMs: 5000,
      fetchDeadlineMs: 30_000,
      fetchSlots: new Semaphore({ permits: 4, waitersMax: 1000, name: "fetch" }),
      fetchBandwidth: new TokenBucket(clock, {
        rateBytesPerSec: "unlimited",
        waitersMax: 1000,
        name: "fetch",
      }),
    });
    partition.log.attachRemoteReader(
      new TierRemoteReader(partition, cache, {
        prefix: "strata",
        clusterId: "sim",
        chunkBytes: 16 * 1024,
        readaheadChunksMax: 2,
      }),
    );
    return { partition, tier, control, cache };
  }

  const settle = async () => {
    // Simulated I/O completes in promise callbacks: a bounded number of loop turns settles them.
    for (let i = 0; i < 30; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  };

  const advance = async () => {
    clock.advance(stepMs);
    const now = clock.nowMs();
    world.partition.log.onTick(now);
    world.tier.onTick(now);
    world.cache.onTick(now);
    await settle();
  };

  const check = () => {
    const sb = world.partition.superblock;
    fail(inv.floorMonotone(floorSeen, sb.tieredUpToOffset));
    floorSeen = Math.max(floorSeen, sb.tieredUpToOffset);
    fail(inv.evictionSound(world.partition.log.segments, sb.tieredUpToOffset));
  };

  /**
   * Waits for `promise` while virtual time moves on (fetches wait on retries and timeouts of the
   * virtual clock); null when it is still pending after `maxMs`.
   */
  const withTime = async <T>(promise: Promise<T>, maxMs: number): Promise<{ value: T } | null> => {
    let outcome: { value: T } | { error: unknown } | null = null;
    promise.then((value) => (outcome = { value }), (error) => (outcome = { error }));
    for (let waited = 0; outcome === null && waited <= maxMs; waited += stepMs) {
      await settle();
      if (outcome === null) await advance();
    }
    const settled = outcome as { value: T } | { error: unknown } | null;
    if (settled === null) return null;
    if ("error" in settled) throw settled.error;
    return settled;
  };

  const poll = async (offset: number) => {
    try {
      const got = await withTime(world.partition.log.read(offset, 5, 64 * 1024), 10_000);
      if (got === null) {
        trace.record(clock.nowMs(), `poll ${offset} -> pending`);
        return;
      }
      const r = got.value;
      trace.record(clock.nowMs(), `poll ${offset} -> ${r.messages.length}`);
      fail(inv.readBackIntact(r.messages));
    } catch (error) {
      // Transient answers are fine; missing or corrupt data is never.
      if (error instanceof RemoteDataLossError || error instanceof RemoteCorruptError) fail(String(error));
      trace.record(clock.nowMs(), `poll ${offset} -> ${(error as Error).name}`);
    }
  };

  const crash = async () => {
    crashes++;
    trace.record(clock.nowMs(), "crash");
    disk.crash();
    let partition: Partition;
    try {
      partition = await Partition.open(disk, clock, dataPath, address, logConfig, silentLogger());
    } catch (error) {
      // Refusing a partition after a crash means the durable state was not what the code assumed.
      fail(`after a crash the partition could not be opened: ${(error as Error).message}`);
      return;
    }
    world = await openWorld(partition);
    nextAssign = partition.log.nextOffset;
    fail(
      nextAssign < acknowledgedBelow
        ? `after the crash the log ends at ${nextAssign}, below acknowledged ${acknowledgedBelow}`
        : null,
    );
    check();
  };

  /** Purge: every message goes, offsets start again at 0 under a new generation. */
  const purge = async () => {
    trace.record(clock.nowMs(), "purge");
    const purging = world.partition.purge();
    const done = await withTime(purging, 10_000);
    if (done === null) {
      fail("a purge did not finish within 10 s of virtual time");
      return;
    }
    world.tier.purged("1/1/0");
    acknowledgedBelow = 0;
    nextAssign = 0;
    floorSeen = world.partition.superblock.tieredUpToOffset;
    fail(floorSeen === 0 ? null : `after a purge the floor is ${floorSeen}, not 0`);
  };

  for (let step = 0; step < o.steps && violation === null; step++) {
    if (clock.nowMs() >= activeUntilMs && Object.keys(sim.faults).length > 0) {
      sim.faults = {};
      trace.record(clock.nowMs(), "faults stop");
    }
    const roll = workload.nextFloat();
    if (clock.nowMs() < activeUntilMs && workload.chance(o.scenario.crashChance)) {
      await crash();
    } else if (clock.nowMs() < activeUntilMs && workload.chance(o.scenario.purgeChance ?? 0)) {
      await purge();
    } else if (roll < 0.35) {
      const count = workload.int(1, 3);
      const base = nextAssign;
      nextAssign += count;
      const messages = Array.from({ length: count }, (_, i) => ({
        key: null,
        headers: {},
        payload: new Uint8Array(payloadBytes).fill((base + i) & 0xff),
      }));
      const appended = world.partition.log.append(messages);
      const from = world;
      appended.then((r) => {
        if (r.baseOffset !== base) fail(`an append expected at ${base} was assigned ${r.baseOffset}`);
        acknowledgedBelow = Math.max(acknowledgedBelow, r.baseOffset + r.count);
      }, (error) => {
        // Only a crash may fail an append: the process it belonged to is gone.
        if (from === world) fail(`an append failed without a crash: ${error}`);
      });
      trace.record(clock.nowMs(), `produce ${base}+${count}`);
      await settle();
    } else if (roll < 0.5) {
      const { firstOffset, nextOffset } = world.partition.log.stats();
      await poll(workload.int(firstOffset, Math.max(firstOffset, nextOffset)));
    } else {
      await advance();
    }
    check();
  }

  // Liveness: with the faults gone, the floor reaches the last sealed segment within the bound.
  sim.faults = {};
  for (let waited = 0; waited < recoveryMs && violation === null; waited += stepMs) {
    const sealed = world.partition.log.segments.filter((s) => s.sealed).at(-1);
    if (sealed === undefined || world.partition.superblock.tieredUpToOffset > sealed.endOffset) break;
    await advance();
    check();
  }
  const lastSealed = world.partition.log.segments.filter((s) => s.sealed).at(-1)?.endOffset ?? null;
  fail(inv.caughtUp(world.partition.superblock.tieredUpToOffset, lastSealed));

  // No acknowledged message lost or changed, read back through the ordinary poll path (local or remote).
  if (violation === null) {
    const first = world.partition.log.stats().firstOffset;
    const offsets: number[] = [];
    for (let offset = first, reads = 0; reads < 100_000 && offset < world.partition.log.nextOffset; reads++) {
      let r;
      try {
        const got = await withTime(world.partition.log.read(offset, 100, 1 << 20), 10_000);
        if (got === null) continue;
        r = got.value;
      } catch (error) {
        // A fetch still waiting is transient: let time pass and ask again.
        if (error instanceof RemoteDataLossError || error instanceof RemoteCorruptError) {
          fail(String(error));
          break;
        }
        await advance();
        continue;
      }
      fail(inv.readBackIntact(r.messages));
      offsets.push(...r.messages.map((m) => m.offset));
      if (r.messages.length === 0) break;
      offset = r.nextOffset;
    }
    fail(inv.acknowledgedPresent(acknowledgedBelow, first, offsets));
  }
  trace.record(
    clock.nowMs(),
    `end floor=${world.partition.superblock.tieredUpToOffset} acked=${acknowledgedBelow}`,
  );
  await world.control.close().catch(() => {});
  return {
    seed: o.seed,
    scenario: o.scenario.name,
    ok: violation === null,
    violation,
    trail: trace.trail,
    traceHash: trace.hash,
    events: trace.events,
    acknowledged: acknowledgedBelow,
    crashes,
    floor: world.partition.superblock.tieredUpToOffset,
  };
}
