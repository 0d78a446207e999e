import type { SimFaults } from "../objectstore/sim_object_store.ts";
import type { Rng } from "../runtime/rng.ts";

/** What a scenario does to the world; faults apply until the run's recovery window. */
export interface Scenario {
  name: string;
  /** The object store's faults while the scenario is active; a function of the run's own time. */
  faults: (rng: Rng, activeUntilMs: number) => SimFaults;
  /** Chance per step that the process crashes (the disk loses what was not durable). */
  crashChance: number;
  /** Chance per step that the partition is purged (a new generation, offsets from 0). */
  purgeChance?: number;
  /** Chance per step that the process crashes and its data directory is wiped (a new incarnation). */
  wipeDataChance?: number;
  /** Chance per step that the topic is deleted and created again under the same name. */
  deleteTopicChance?: number;
  /** Chance per step that an evicted segment's object is lost or has a byte flipped in the store. */
  sabotageChance?: number;
  /** Crashes also strike in the middle of evictions, before any of their durable steps. */
  crashAtEvictionSteps?: boolean;
  /** A crash also loses the chunk cache's directory: the restart is cold. */
  wipeCacheOnCrash?: boolean;
  /** The chunk cache's budget (256 KiB, 16 chunks, by default). */
  cacheBudgetBytes?: number;
  /** Segments also roll once this old (ms): small ones, which the merger joins (none by default). */
  segmentMaxAgeMs?: number;
  /** Draws the scenario's chances from the seed (swarm); what it returns replaces the fields above. */
  draw?: (rng: Rng) => Partial<Omit<Scenario, "name" | "faults" | "draw">>;
}

const none = (): SimFaults => ({});

/** One scenario for each failure of the design sources, and `swarm`, which draws them all from the seed. */
export const scenarios: Record<string, Scenario> = {
  store_outage: {
    name: "store_outage",
    faults: (rng, until) => {
      const from = rng.int(0, Math.floor(until / 2));
      return { outages: [{ fromMs: from, toMs: from + rng.int(1000, Math.max(1000, until - from)) }] };
    },
    crashChance: 0,
  },
  transient_errors: {
    name: "transient_errors",
    faults: () => ({
      errorRates: {
        put: { transient: 0.2, throttle: 0.1 },
        get: { transient: 0.2, throttle: 0.1 },
        head: { transient: 0.1 },
      },
      latencyMs: { min: 1, max: 50 },
    }),
    crashChance: 0,
  },
  lost_transfer_result: {
    name: "lost_transfer_result",
    faults: () => ({ errorRates: { put: { lostReply: 0.2 } }, latencyMs: { min: 1, max: 20 } }),
    crashChance: 0,
  },
  nontransient_errors: {
    name: "nontransient_errors",
    // Unexpected 4xx on uploads: the pipeline stalls on the non-transient profile, never skips.
    faults: () => ({ errorRates: { put: { nonTransient: 0.3 }, head: { nonTransient: 0.1 } } }),
    crashChance: 0,
  },
  throttling_storm: {
    name: "throttling_storm",
    faults: () => ({
      errorRates: { put: { throttle: 0.5 }, get: { throttle: 0.5 }, head: { throttle: 0.5 } },
      latencyMs: { min: 1, max: 30 },
    }),
    crashChance: 0,
  },
  slow_uploads_local_pressure: {
    name: "slow_uploads_local_pressure",
    // Every request takes up to 2 s of virtual time while producers keep writing: local bytes pile up
    // above the envelope until uploads catch up.
    faults: () => ({ latencyMs: { min: 200, max: 2000 } }),
    crashChance: 0,
  },
  purge_during_upload: {
    name: "purge_during_upload",
    // Slow uploads so that purges land while one is in flight; its floor command must be rejected.
    faults: () => ({ latencyMs: { min: 50, max: 500 } }),
    crashChance: 0,
    purgeChance: 0.004,
  },
  crash_during_eviction: {
    name: "crash_during_eviction",
    // Crashes between steps, and before each durable step of an eviction (the marker's creation,
    // write, sync and directory fsync, the .log's unlink and its directory fsync).
    faults: none,
    crashChance: 0.01,
    crashAtEvictionSteps: true,
  },
  crash_mid_upload: {
    name: "crash_mid_upload",
    // Slow transfers, some of whose replies are lost: crashes land while uploads are in flight, leave
    // objects no floor names yet, and the restarted process uploads them again (create-if-absent).
    faults: () => ({ errorRates: { put: { lostReply: 0.1 } }, latencyMs: { min: 100, max: 1000 } }),
    crashChance: 0.01,
  },
  cold_cache_restart: {
    name: "cold_cache_restart",
    // Restarts lose the chunk cache, and the store is unreachable for a while: reads of evicted data
    // fail closed (a transient error), never an empty or wrong answer.
    faults: (rng, until) => {
      const outages = [];
      for (let i = 0; i < 3; i++) {
        const from = rng.int(0, Math.floor(until));
        outages.push({ fromMs: from, toMs: from + rng.int(500, 5000) });
      }
      return { outages };
    },
    crashChance: 0.004,
    wipeCacheOnCrash: true,
  },
  wiped_data_dir: {
    name: "wiped_data_dir",
    // The bucket keeps the old incarnation's objects, the local log starts empty: the local log is
    // authoritative and the stale objects are GC's.
    faults: none,
    crashChance: 0,
    wipeDataChance: 0.002,
  },
  topic_delete_then_gc: {
    name: "topic_delete_then_gc",
    faults: () => ({ latencyMs: { min: 1, max: 300 } }),
    crashChance: 0,
    deleteTopicChance: 0.003,
  },
  cache_full: {
    name: "cache_full",
    // A cache of two chunks under readers of every evicted range: it trims, never exceeds its budget.
    faults: none,
    crashChance: 0.002,
    cacheBudgetBytes: 32 * 1024,
  },
  object_missing_or_corrupt: {
    name: "object_missing_or_corrupt",
    faults: none,
    crashChance: 0.002,
    sabotageChance: 0.003,
  },
  store_clock_skew: {
    name: "store_clock_skew",
    // The store's clock is an hour off either way while purges orphan whole incarnations: deletion
    // must still wait `delete_grace` by the server's own clock.
    faults: (rng) => ({
      wallSkewMs: (rng.chance(0.5) ? -1 : 1) * rng.int(60_000, 3_600_000),
      latencyMs: { min: 1, max: 300 },
    }),
    crashChance: 0.002,
    purgeChance: 0.004,
  },
  merges: {
    name: "merges",
    // Segments roll by age, small, and idle runs merge them while crashes strike and requests fail.
    faults: () => ({
      errorRates: { put: { transient: 0.1, lostReply: 0.05 }, get: { transient: 0.1 } },
      latencyMs: { min: 1, max: 30 },
    }),
    crashChance: 0.003,
    crashAtEvictionSteps: true,
    segmentMaxAgeMs: 150,
  },
  swarm: {
    name: "swarm",
    faults: (rng) => ({
      errorRates: {
        put: { transient: rng.nextFloat() * 0.3, lostReply: rng.nextFloat() * 0.1 },
        get: { transient: rng.nextFloat() * 0.3, throttle: rng.nextFloat() * 0.1 },
        head: { transient: rng.nextFloat() * 0.2 },
      },
      latencyMs: { min: 1, max: rng.int(1, 200) },
      wallSkewMs: rng.int(-600_000, 600_000),
    }),
    crashChance: 0.005,
    draw: (rng) => ({
      crashChance: rng.nextFloat() * 0.01,
      purgeChance: rng.nextFloat() * 0.002,
      wipeDataChance: rng.nextFloat() * 0.001,
      deleteTopicChance: rng.nextFloat() * 0.001,
      sabotageChance: rng.nextFloat() * 0.002,
      wipeCacheOnCrash: rng.chance(0.5),
      crashAtEvictionSteps: rng.chance(0.5),
      cacheBudgetBytes: rng.int(2, 16) * 16 * 1024,
      ...(rng.chance(0.5) ? { segmentMaxAgeMs: rng.int(100, 1000) } : {}),
    }),
  },
};
