import { Partition } from "../log/partition.ts";
import { RemoteCorruptError, RemoteDataLossError } from "../log/remote_reader.ts";
import { RetryingObjectStore } from "../objectstore/retrying_object_store.ts";
import { defaultRetryProfiles } from "../objectstore/retry_policy.ts";
import { SimObjectStore } from "../objectstore/sim_object_store.ts";
import { silentLogger } from "../runtime/logger.ts";
import { BufferPool } from "../runtime/buffer_pool.ts";
import { writeBufferBytes, writeBuffersMax } from "../broker/shard_runtime.ts";
import { Rng } from "../runtime/rng.ts";
import { Semaphore } from "../runtime/semaphore.ts";
import { TokenBucket } from "../runtime/token_bucket.ts";
import { VirtualClock } from "../runtime/virtual_clock.ts";
import { ChunkCache } from "../tier/chunk_cache.ts";
import { LocalControlLog } from "../tier/control_log.ts";
import { TierRemoteReader } from "../tier/tier_remote_reader.ts";
import { TierService } from "../tier/tier_service.ts";
import { Housekeeping } from "../tier/housekeeping.ts";
import { incarnationOf, incarnationPath, segmentKeys } from "../tier/object_keys.ts";
import * as inv from "./invariants.ts";
import type { Scenario } from "./scenarios.ts";
import { SimDisk } from "./sim_disk.ts";
import { IoScheduler } from "./io_scheduler.ts";
import { Trace } from "./trace.ts";
import {
  address,
  cacheChunkBytes,
  dataPath,
  fetchConcurrency,
  gcWindowMs,
  housekeepingConfig,
  logConfig,
  payloadBytes,
  recoveryMs,
  requestDeadlineMsMax,
  stepMs,
  stretchBytesBound,
  uploadConcurrency,
  uploadPieceBytes,
} from "./sim_settings.ts";
import { evictionStep } from "./eviction_steps.ts";

export interface SimOptions {
  seed: number;
  scenario: Scenario;
  /** Steps of the workload; each is a produce, a poll, or 10 ms of virtual time. */
  steps: number;
  /** Only for testing the simulator itself: a disk whose fsync does nothing, so data must be lost. */
  lyingFsync?: boolean;
  /** Only for testing the simulator itself: a tighter bound on the bytes one loop iteration moves. */
  stretchBytesMax?: number;
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
  /** Messages acknowledged over the whole run, across purges, wipes and deletions. */
  acknowledgedTotal: number;
  crashes: number;
  /** Crashes that struck at a durable step of an eviction, by step (`crash_during_eviction`). */
  crashPoints: Record<string, number>;
  floor: number;
}

/** The process under test: a partition, its tier service, control log, chunk cache and housekeeping. */
interface World {
  partition: Partition;
  tier: TierService;
  control: LocalControlLog;
  cache: ChunkCache;
  housekeeping: Housekeeping;
}

/**
 * One deterministic run: one seed decides the workload, the store's faults and latencies, and what
 * every crash keeps. The real log, tier service and chunk cache run on a `SimDisk`, the `sim` object
 * store and a `VirtualClock`; invariants are checked after every step and at the end.
 */
export async function runSimulation(o: SimOptions): Promise<SimResult> {
  const workload = new Rng(o.seed * 4 + 1);
  const clock = new VirtualClock();
  const raw = new SimDisk(new Rng(o.seed * 4 + 2), { lyingFsync: o.lyingFsync ?? false });
  // The bytes each loop iteration moves: an immediate queued from the check phase runs in the next
  // iteration, so this chain closes one iteration's sum at a time.
  let iterationBytes = 0;
  let iterationBytesMax = 0;
  let iterating = true;
  const closeIteration = () => {
    iterationBytesMax = Math.max(iterationBytesMax, iterationBytes);
    iterationBytes = 0;
    if (iterating) setImmediate(closeIteration);
  };
  setImmediate(closeIteration);
  /** Faults and crashes strike only while the workload runs, before the liveness and GC windows. */
  let faultsActive = true;
  const completionRng = new Rng(o.seed * 4 + 1_000_003);
  /** One process's view of the disk; a crash revokes it and the restarted process gets a new one. */
  const processDisk = () =>
    new IoScheduler(raw, completionRng, (bytes) => (iterationBytes += bytes), (name, path) => {
      const step = evictionStep(name, path, lastEvictionStep);
      if (step === null) return;
      lastEvictionStep = step;
      if (
        !dead && faultsActive && !sequenceRunning && scenario.crashAtEvictionSteps &&
        crashPointRng.chance(0.05)
      ) {
        crashPoints[step] = (crashPoints[step] ?? 0) + 1;
        die(`crash before ${step}`);
      }
    });
  let disk = processDisk();
  /** Set between a crash and the restart. */
  let dead = false;
  /** A purge, deletion or restart is under way: crashes inside disk operations wait for it to end. */
  let sequenceRunning = false;
  /** Crashes that struck at a durable step of an eviction, by step. */
  const crashPoints: Record<string, number> = {};
  const crashPointRng = new Rng(o.seed * 4 + 4_000_037);
  /** The last eviction step seen, so that a directory fsync can be told apart by what it makes durable. */
  let lastEvictionStep: string | null = null;
  const scenario: Scenario = { ...o.scenario, ...(o.scenario.draw?.(new Rng(o.seed * 4 + 2_000_003)) ?? {}) };
  const sim = new SimObjectStore(clock, new Rng(o.seed * 4 + 3));
  const store = new RetryingObjectStore(sim, clock, new Rng(o.seed * 4 + 4), defaultRetryProfiles, {
    putMs: requestDeadlineMsMax,
    getMs: 5000,
    otherMs: 30_000,
  }, null);
  const trace = new Trace();
  const activeUntilMs = o.steps * stepMs * 0.7;
  sim.faults = scenario.faults(new Rng(o.seed * 4 + 5), activeUntilMs);
  let acknowledgedBelow = 0;
  let acknowledgedTotal = 0;
  let crashes = 0;
  /** Counts processes (and topic lives): an answer to an older one never reached a client. */
  let processNo = 0;
  /** Partitions created so far: each new one (after a wipe or a delete) draws a new revision. */
  let incarnations = 0;
  /** The topic options the workload changes: tiering on or off, and the local size envelope. */
  const options = { tiered: true, localSizeBytes: 64 * 1024 as number | null };
  /**
   * Consumer offsets: the last value each consumer heard acknowledged, and the values it stored since
   * (in flight). After a crash a consumer's offset is its acknowledged value or one of those.
   */
  const consumers = new Map<string, { acknowledged: number | null; inFlight: number[] }>();
  /** Segments whose object the scenario lost or corrupted, by start offset, with their end. */
  const sabotaged = new Map<number, number>();
  let floorSeen = 0;
  let violation: string | null = null;
  const fail = (what: string | null) => {
    if (what !== null && violation === null) {
      violation = what;
      trace.record(clock.nowMs(), `VIOLATION ${what}`);
    }
  };

  sim.onDelete = (key, createdAtMs) =>
    fail(inv.deletedOldEnough(key, createdAtMs, clock.nowMs(), housekeepingConfig.deleteGraceMs));

  const createPartition = async () => {
    await disk.mkdirp(dataPath);
    return await Partition.create(
      disk,
      clock,
      new Rng(o.seed * 4 + 3_000_017 * ++incarnations),
      dataPath,
      address,
      logConfig,
    );
  };
  let world = await openWorld(await createPartition());
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
        uploadConcurrency,
        uploadPieceBytes,
        uploadLoopBackoffMaxMs: 1000,
        segmentUploadTimeoutMs: 10_000,
        retry: defaultRetryProfiles,
      },
    });
    tier.addPartition({
      key: "1/1/0",
      partition,
      // The topic's options as the workload last changed them (read at each use, as a PATCH applies).
      tiered: () => options.tiered,
      envelope: () => ({ ageMs: null, sizeBytes: options.localSizeBytes }),
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
      config: {
        budgetBytes: scenario.cacheBudgetBytes ?? 256 * 1024,
        objectsMax: 64,
        lowWatermarkPercent: 80,
        trimMinIntervalMs: 1000,
      },
      fetchTimeoutMs: 5000,
      fetchDeadlineMs: 30_000,
      fetchSlots: new Semaphore({ permits: fetchConcurrency, waitersMax: 1000, name: "fetch" }),
      fetchBandwidth: new TokenBucket(clock, {
        rateBytesPerSec: "unlimited",
        waitersMax: 1000,
        name: "fetch",
      }),
    });
    // The broker lends each log its shard's write buffers; the simulated one does the same.
    partition.log.useWriteBuffers(
      new BufferPool({ bufferBytes: writeBufferBytes, buffersMax: writeBuffersMax }),
    );
    partition.log.attachRemoteReader(
      new TierRemoteReader(partition, cache, {
        prefix: "strata",
        clusterId: "sim",
        chunkBytes: cacheChunkBytes,
        readaheadChunksMax: 2,
      }),
    );
    const housekeeping = new Housekeeping({
      clock,
      logger: silentLogger(),
      store,
      config: { ...housekeepingConfig, prefix: "strata", clusterId: "sim", segmentUploadTimeoutMs: 10_000 },
      sweepsOrphans: true,
      partitions: () => tier.partitions(),
      requestCount: () => 0,
      liveTable: () => {
        const sb = partition.superblock;
        return new Map([["1/1/0", {
          createdRevision: sb.createdRevision,
          purgeGeneration: sb.purgeGeneration,
          deletedUpToOffset: sb.deletedUpToOffset,
        }]]);
      },
      upload: tier.uploadDeps,
    });
    return { partition, tier, control, cache, housekeeping };
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
    world.housekeeping.onTick(now);
    await settle();
  };

  const liveIncarnation = () => incarnationOf("strata", "sim", world.partition);

  /** What each marker says next to the object it names; sabotaged segments are the scenario's doing. */
  const markerViews = (): inv.MarkerView[] =>
    world.partition.log.segments
      .filter((s) => s.location === "remote" && s.marker !== null && !sabotaged.has(s.startOffset))
      .map((s) => {
        const key = segmentKeys(liveIncarnation(), s.startOffset).log;
        return {
          startOffset: s.startOffset,
          key,
          markerCrc32: s.marker!.logCrc32,
          objectCrc32: sim.peek(key)?.metadata["crc32"] ?? null,
        };
      });

  const check = () => {
    const sb = world.partition.superblock;
    fail(inv.floorMonotone(floorSeen, sb.tieredUpToOffset));
    floorSeen = Math.max(floorSeen, sb.tieredUpToOffset);
    fail(inv.evictionSound(world.partition.log.segments, sb.tieredUpToOffset));
    fail(inv.markersBacked(markerViews()));
    fail(inv.cacheWithinBudget(world.cache.usedBytes, world.cache.budgetBytes));
    fail(inv.stretchBounded(iterationBytesMax, o.stretchBytesMax ?? stretchBytesBound));
  };

  /** A read error is the scenario's doing when it names a segment the scenario lost or corrupted. */
  const expectedLoss = (error: unknown) =>
    (error instanceof RemoteDataLossError || error instanceof RemoteCorruptError) &&
    sabotaged.has(error.segment);

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
      // Transient answers are fine; missing or corrupt data is never, unless the scenario made it so.
      const lossy = error instanceof RemoteDataLossError || error instanceof RemoteCorruptError;
      if (lossy && !expectedLoss(error)) fail(String(error));
      trace.record(clock.nowMs(), `poll ${offset} -> ${(error as Error).name}`);
    }
  };

  /**
   * The process dies at once: the disk keeps what a crash keeps, and nothing of the dead process
   * touches it again. Synchronous, so that it can strike in the middle of a disk operation.
   */
  const die = (what: string) => {
    crashes++;
    processNo++;
    dead = true;
    trace.record(clock.nowMs(), what);
    // The dead process starts nothing new; a request it had in flight may still land in the store.
    void world.housekeeping.stop();
    disk.revoke();
    raw.crash();
  };

  /** A crash; `wipe` also loses the data directory (a new disk), so a new incarnation begins. */
  const crash = async (wipe = false) => {
    die(wipe ? "crash, data directory wiped" : "crash");
    await restart(wipe);
  };

  /** The restarted process: recovery from what the crash kept, then a new world on it. */
  const restart = async (wipe = false) => {
    sequenceRunning = true;
    try {
      await restartNow(wipe);
    } finally {
      sequenceRunning = false;
    }
  };

  const restartNow = async (wipe: boolean) => {
    dead = false;
    disk = processDisk();
    if (scenario.wipeCacheOnCrash) await raw.removeTree("/cache");
    if (wipe) {
      await raw.removeTree(dataPath);
      world = await openWorld(await createPartition());
      restartFromEmpty();
      return;
    }
    let partition: Partition;
    try {
      partition = await Partition.open(disk, clock, dataPath, address, logConfig, silentLogger());
    } catch (error) {
      // Refusing a partition after a crash means the durable state was not what the code assumed.
      fail(`after a crash the partition could not be opened: ${(error as Error).message}`);
      return;
    }
    world = await openWorld(partition);
    for (const [name, c] of consumers) {
      fail(inv.consumerOffsetDurable(name, partition.offsets.get(name), c.acknowledged, c.inFlight));
      const now = partition.offsets.get(name);
      consumers.set(name, { acknowledged: now, inFlight: [] });
    }
    nextAssign = partition.log.nextOffset;
    fail(
      nextAssign < acknowledgedBelow
        ? `after the crash the log ends at ${nextAssign}, below acknowledged ${acknowledgedBelow}`
        : null,
    );
    check();
  };

  /** A log that starts again from offset 0 (wipe, delete, purge): nothing before is owed. */
  function restartFromEmpty() {
    consumers.clear();
    acknowledgedBelow = 0;
    nextAssign = world.partition.log.nextOffset;
    floorSeen = world.partition.superblock.tieredUpToOffset;
    sabotaged.clear();
  }

  /** The topic is deleted and created again under its name: a new incarnation, the old one GC's. */
  const deleteTopic = async () => {
    sequenceRunning = true;
    try {
      await deleteTopicNow();
    } finally {
      sequenceRunning = false;
    }
  };

  const deleteTopicNow = async () => {
    trace.record(clock.nowMs(), "delete topic");
    processNo++;
    void world.housekeeping.stop();
    world.tier.removePartition("1/1/0");
    await world.control.close().catch(() => {});
    await world.partition.close().catch(() => {});
    await disk.removeTree(dataPath);
    world = await openWorld(await createPartition());
    restartFromEmpty();
  };

  /** The store loses an evicted segment's object, or one of its bytes flips. */
  const sabotage = () => {
    const remote = world.partition.log.segments.filter((s) =>
      s.location === "remote" && !sabotaged.has(s.startOffset)
    );
    if (remote.length === 0) return;
    const segment = remote[workload.int(0, remote.length - 1)]!;
    const key = segmentKeys(liveIncarnation(), segment.startOffset).log;
    const object = sim.peek(key);
    if (object === undefined) return;
    sabotaged.set(segment.startOffset, segment.endOffset);
    if (workload.chance(0.5)) {
      sim.lose(key);
      trace.record(clock.nowMs(), `lose ${segment.startOffset}`);
    } else {
      sim.corrupt(key, workload.int(0, object.bytes.length - 1));
      trace.record(clock.nowMs(), `corrupt ${segment.startOffset}`);
    }
  };

  /** A consumer stores its offset (one of three consumers, a random offset of the log). */
  const storeConsumerOffset = () => {
    const name = `consumer-${workload.int(0, 2)}`;
    const { firstOffset, nextOffset } = world.partition.log.stats();
    const offset = workload.int(firstOffset, Math.max(firstOffset, nextOffset));
    const c = consumers.get(name) ?? { acknowledged: null, inFlight: [] };
    c.inFlight.push(offset);
    consumers.set(name, c);
    const from = processNo;
    world.partition.offsets.set(name, offset).then(() => {
      if (from !== processNo) return;
      const now = consumers.get(name);
      if (now === undefined) return;
      // Writes are serialized: this one and every one before it are durable.
      now.acknowledged = offset;
      now.inFlight = now.inFlight.slice(now.inFlight.indexOf(offset) + 1);
    }, (error) => {
      if (from === processNo) fail(`storing a consumer offset failed without a crash: ${error}`);
    });
    trace.record(clock.nowMs(), `consumer ${name} at ${offset}`);
  };

  /** The topic's options change: tiering off or on, the local size envelope smaller or larger. */
  const changeOptions = () => {
    options.tiered = workload.chance(0.8);
    options.localSizeBytes = [0, 32 * 1024, 64 * 1024, 256 * 1024, null][workload.int(0, 4)]!;
    trace.record(clock.nowMs(), `options tiered=${options.tiered} local_size=${options.localSizeBytes}`);
  };

  /** Purge: every message goes, offsets start again at 0 under a new generation. */
  const purge = async () => {
    sequenceRunning = true;
    try {
      await purgeNow();
    } finally {
      sequenceRunning = false;
    }
  };

  const purgeNow = async () => {
    trace.record(clock.nowMs(), "purge");
    const purging = world.partition.purge();
    const done = await withTime(purging, 10_000);
    if (done === null) {
      fail("a purge did not finish within 10 s of virtual time");
      return;
    }
    world.tier.purged("1/1/0");
    restartFromEmpty();
    fail(floorSeen === 0 ? null : `after a purge the floor is ${floorSeen}, not 0`);
  };

  for (let step = 0; step < o.steps && violation === null; step++) {
    if (clock.nowMs() >= activeUntilMs && (Object.keys(sim.faults).length > 0 || !options.tiered)) {
      sim.faults = {};
      options.tiered = true;
      trace.record(clock.nowMs(), "faults stop");
    }
    if (dead) await restart();
    const roll = workload.nextFloat();
    const active = clock.nowMs() < activeUntilMs;
    if (active && workload.chance(scenario.crashChance)) {
      await crash();
    } else if (active && workload.chance(scenario.purgeChance ?? 0)) {
      await purge();
    } else if (active && workload.chance(scenario.wipeDataChance ?? 0)) {
      await crash(true);
    } else if (active && workload.chance(scenario.deleteTopicChance ?? 0)) {
      await deleteTopic();
    } else if (active && workload.chance(scenario.sabotageChance ?? 0)) {
      sabotage();
    } else if (roll < 0.03) {
      storeConsumerOffset();
    } else if (roll < 0.04 && active) {
      changeOptions();
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
      const from = processNo;
      appended.then((r) => {
        // An answer that arrives after its process crashed or its topic went never reached the client.
        if (from !== processNo) return;
        if (r.baseOffset !== base) fail(`an append expected at ${base} was assigned ${r.baseOffset}`);
        acknowledgedBelow = Math.max(acknowledgedBelow, r.baseOffset + r.count);
        acknowledgedTotal += r.count;
      }, (error) => {
        // Only a crash may fail an append: the process it belonged to is gone.
        if (from === processNo) fail(`an append failed without a crash: ${error}`);
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

  faultsActive = false;
  if (dead && violation === null) await restart();
  // Liveness: with the faults gone (and tiering on), the floor reaches the last sealed segment in time.
  sim.faults = {};
  options.tiered = true;
  for (let waited = 0; waited < recoveryMs && violation === null; waited += stepMs) {
    const sealed = world.partition.log.segments.filter((s) => s.sealed).at(-1);
    if (sealed === undefined || world.partition.superblock.tieredUpToOffset > sealed.endOffset) break;
    await advance();
    check();
  }
  const lastSealed = world.partition.log.segments.filter((s) => s.sealed).at(-1)?.endOffset ?? null;
  fail(inv.caughtUp(world.partition.superblock.tieredUpToOffset, lastSealed));

  // GC: given several sweeps past the grace, every object of a dead incarnation is gone.
  for (let waited = 0; waited < gcWindowMs && violation === null; waited += stepMs * 10) {
    for (let i = 0; i < 10; i++) await advance();
    check();
    if (inv.orphansCollected(sim.keys(), [incarnationPath(liveIncarnation())]) === null) break;
  }
  fail(inv.orphansCollected(sim.keys(), [incarnationPath(liveIncarnation())]));

  // No acknowledged message lost or changed, read back through the ordinary poll path (local or remote).
  if (violation === null) {
    const first = world.partition.log.stats().firstOffset;
    const offsets: number[] = [];
    /** The start of a damaged segment ahead: reads stop short of it, then skip it. */
    let damagedAhead: number | null = null;
    for (let offset = first, reads = 0; reads < 100_000 && offset < world.partition.log.nextOffset; reads++) {
      let r;
      const count = damagedAhead === null || damagedAhead <= offset
        ? 100
        : Math.min(100, damagedAhead - offset);
      try {
        const got = await withTime(world.partition.log.read(offset, count, 1 << 20), 10_000);
        if (got === null) continue;
        r = got.value;
      } catch (error) {
        // The scenario's own damage is skipped over; any other loss is a violation.
        if (expectedLoss(error)) {
          const segment = (error as RemoteDataLossError).segment;
          if (segment > offset) damagedAhead = segment;
          else offset = sabotaged.get(segment)! + 1;
          continue;
        }
        if (error instanceof RemoteDataLossError || error instanceof RemoteCorruptError) {
          fail(String(error));
          break;
        }
        // A fetch still waiting is transient: let time pass and ask again.
        await advance();
        continue;
      }
      fail(inv.readBackIntact(r.messages));
      offsets.push(...r.messages.map((m) => m.offset));
      if (r.messages.length === 0) break;
      offset = r.nextOffset;
    }
    const lost = [...sabotaged].flatMap(([start, end]) =>
      Array.from({ length: end - start + 1 }, (_, i) => start + i)
    );
    fail(inv.acknowledgedPresent(acknowledgedBelow, first, [...offsets, ...lost]));
  }
  trace.record(
    clock.nowMs(),
    `end floor=${world.partition.superblock.tieredUpToOffset} acked=${acknowledgedBelow}`,
  );
  iterating = false;
  // Its request in flight may wait on virtual time (a lost reply's timeout): time moves while it ends.
  await withTime(world.housekeeping.stop(), 120_000);
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
    acknowledgedTotal,
    crashes,
    crashPoints,
    floor: world.partition.superblock.tieredUpToOffset,
  };
}
