import { type DeadlineObjectStore, RetryingObjectStore } from "../objectstore/retrying_object_store.ts";
import { defaultRetryProfiles } from "../objectstore/retry_policy.ts";
import { SimObjectStore } from "../objectstore/sim_object_store.ts";
import { Rng } from "../runtime/rng.ts";
import { VirtualClock } from "../runtime/clock/virtual_clock.ts";
import { processDisk } from "./crash_restart.ts";
import { rngStreams, streamSeed } from "./rng_streams.ts";
import * as inv from "./invariants.ts";
import type { IoScheduler } from "./io_scheduler.ts";
import { IterationBytesMeter } from "./iteration_meter.ts";
import type { Scenario } from "./scenarios.ts";
import { SimDisk } from "./sim_disk.ts";
import type { SimProcess } from "./sim_process.ts";
import { housekeepingConfig, requestDeadlineMsMax, stepMs, stretchBytesBound } from "./sim_settings.ts";
import { Trace } from "./trace.ts";

export interface SimOptions {
  seed: number;
  scenario: Scenario;
  /** Steps of the workload; each is a produce, a poll, an event of the scenario, or 10 ms of virtual time. */
  steps: number;
  /** Only for testing the simulator itself: a disk whose fsync does nothing, so data must be lost. */
  lyingFsync?: boolean;
  /** Only for testing the simulator itself: a tighter bound on the bytes one loop iteration moves. */
  stretchBytesMax?: number;
}

/** The topic options the workload changes: tiering on or off, and the local size envelope. */
export interface TopicOptions {
  tiered: boolean;
  localSizeBytes: number | null;
}

/**
 * A consumer's offsets: the last value it heard acknowledged, and the values it stored since (in
 * flight). After a crash its offset is the acknowledged value or one of those.
 */
export interface ConsumerOffsets {
  acknowledged: number | null;
  inFlight: number[];
}

/** The part of the run in which faults and the scenario's events strike; the rest checks recovery. */
const activeFraction = 0.7;

/** The retrying client's deadlines per request kind, retries included. */
const storeDeadlines = { putMs: requestDeadlineMsMax, getMs: 5000, otherMs: 30_000 };

/**
 * Everything one run holds: the simulated machine (clock, disk, store), the process under test, and
 * the workload's record of what it was promised, against which the invariants are checked. Each
 * source of chance is its own `Rng` stream derived from the seed.
 */
export class World {
  // What the run is.
  readonly seed: number;
  /** The scenario, with the fields its `draw` picked for this seed. */
  readonly scenario: Scenario;
  /** Virtual time until which faults and the scenario's events strike. */
  readonly activeUntilMs: number;
  /** The most bytes one loop iteration may move through the disk. */
  readonly stretchBytesMax: number;

  // Sources of chance.
  /** Draws the workload's steps. */
  readonly workload: Rng;
  /** Orders the completion of every process's disk I/O. */
  readonly completionRng: Rng;
  /** Decides whether a crash strikes before a durable step of an eviction. */
  readonly crashPointRng: Rng;

  // The simulated machine and store.
  readonly clock = new VirtualClock();
  /** The disk itself, which a crash cuts back to what was durable. */
  readonly raw: SimDisk;
  /** One process's view of the disk; a crash revokes it and the restarted process gets a new one. */
  disk: IoScheduler;
  readonly sim: SimObjectStore;
  readonly store: DeadlineObjectStore;
  readonly meter = new IterationBytesMeter();
  readonly trace = new Trace();

  /** The process under test; `runSimulation` builds the first one before the workload starts. */
  process!: SimProcess;

  // Crashes and the lives of processes.
  /** Set between a crash and the restart. */
  dead = false;
  /** A purge, deletion or restart is under way: crashes inside disk operations wait for it to end. */
  sequenceRunning = false;
  /** Faults and crashes strike only while the workload runs, before the liveness and GC windows. */
  faultsActive = true;
  crashes = 0;
  /** Counts processes (and topic lives): an answer to an older one never reached a client. */
  processNo = 0;
  /** Partitions created so far: each new one (after a wipe or a delete) draws a new revision. */
  incarnations = 0;
  /** Crashes that struck at a durable step of an eviction, by step. */
  readonly crashPoints: Record<string, number> = {};
  /** The last eviction step seen, so that a directory fsync can be told apart by what it makes durable. */
  lastEvictionStep: string | null = null;

  // What the workload was promised.
  readonly options: TopicOptions = { tiered: true, localSizeBytes: 64 * 1024 };
  /** Every offset below this one was acknowledged to a producer. */
  acknowledgedBelow = 0;
  /** Messages acknowledged over the whole run, across purges, wipes and deletions. */
  acknowledgedTotal = 0;
  /** Appends are assigned offsets in call order: the next one's base, known before it resolves. */
  nextAssign = 0;
  readonly consumers = new Map<string, ConsumerOffsets>();
  /** Segments whose object the scenario lost or corrupted, by start offset, with their end. */
  readonly sabotaged = new Map<number, number>();
  /** The highest floor seen in the current purge generation. */
  floorSeen = 0;
  /** The first violated invariant, when one was. */
  violation: string | null = null;

  constructor(o: SimOptions) {
    const rng = (stream: number) => new Rng(streamSeed(o.seed, stream));
    this.seed = o.seed;
    this.workload = rng(rngStreams.workload);
    this.raw = new SimDisk(rng(rngStreams.disk), { lyingFsync: o.lyingFsync ?? false });
    this.completionRng = rng(rngStreams.completion);
    this.crashPointRng = rng(rngStreams.crashPoint);
    this.disk = processDisk(this);
    this.scenario = { ...o.scenario, ...(o.scenario.draw?.(rng(rngStreams.scenarioDraw)) ?? {}) };
    this.sim = new SimObjectStore(this.clock, rng(rngStreams.store));
    this.store = new RetryingObjectStore(
      this.sim,
      this.clock,
      rng(rngStreams.retries),
      defaultRetryProfiles,
      storeDeadlines,
      null,
    );
    this.activeUntilMs = o.steps * stepMs * activeFraction;
    this.stretchBytesMax = o.stretchBytesMax ?? stretchBytesBound;
    this.sim.faults = this.scenario.faults(rng(rngStreams.faults), this.activeUntilMs);
    this.sim.onDelete = (key, createdAtMs) =>
      this.fail(inv.deletedOldEnough(key, createdAtMs, this.clock.nowMs(), housekeepingConfig.deleteGraceMs));
  }

  /** Records an event in the trace at the current virtual time. */
  record(event: string): void {
    this.trace.record(this.clock.nowMs(), event);
  }

  /** Keeps the first violation (null is none), and records it. */
  fail(what: string | null): void {
    if (what !== null && this.violation === null) {
      this.violation = what;
      this.record(`VIOLATION ${what}`);
    }
  }

  /** The log starts again from offset 0 (a wipe, a deletion, a purge): nothing before is owed. */
  restartFromEmpty(): void {
    this.consumers.clear();
    this.acknowledgedBelow = 0;
    this.nextAssign = this.process.partition.log.nextOffset;
    this.floorSeen = this.process.partition.superblock.tieredUpToOffset;
    this.sabotaged.clear();
  }
}
