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
}

const none = (): SimFaults => ({});

/** The scenarios built so far; issue 8 names the rest. */
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
    faults: none,
    crashChance: 0.01,
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
    }),
    crashChance: 0.005,
  },
};
