import type { SimFaults } from "../../objectstore/sim_object_store.ts";
import type { Rng } from "../../runtime/rng.ts";
import type { SimNetworkFaults } from "../sim_network.ts";

/** Which node an event strikes, chosen when it strikes. */
export type EventTarget = "leader" | "follower";

/** What a scenario does to the cluster at a step; each fault heals (or the node restarts) after its window. */
export type ClusterEvent =
  /** The node's process dies; it restarts `downMs` later, from nothing with `wipe`. */
  | { kind: "crash"; target: EventTarget; wipe: boolean; downMs: number }
  /** The leader dies while one of its uploads is in flight (the event waits up to a second for one). */
  | { kind: "crashMidUpload"; downMs: number }
  /** The leader is cut off from etcd and from both peers, and keeps running: a zombie. */
  | { kind: "isolate"; ms: number }
  /** A follower is cut off from etcd: it hears no floor and falls behind on it. */
  | { kind: "etcdCut"; target: EventTarget; ms: number }
  /** Every node is cut off from etcd. */
  | { kind: "etcdOutage"; ms: number }
  /** Two nodes drawn from the seed are cut apart. */
  | { kind: "netCut"; ms: number }
  /** The leader dies, and a purge is asked of another node while the leadership moves. */
  | { kind: "purgeDuringLeaderChange"; downMs: number }
  /** The topic is deleted and created again under its name: its old objects are the orphan sweep's. */
  | { kind: "recreateTopic" };

export interface ScheduledEvent {
  step: number;
  event: ClusterEvent;
}

/** A cluster scenario: the network's and bucket's faults, the watches' lag, and the events, all from the seed. */
export interface ClusterScenario {
  name: string;
  network: SimNetworkFaults;
  watchLagMs: number;
  bucketFaults: SimFaults;
  /** The events of a run whose active part is `activeSteps` steps long. */
  schedule(rng: Rng, activeSteps: number): ScheduledEvent[];
  /** Draws the faults from the seed (swarm); what it returns replaces the fields above. */
  draw?: (rng: Rng) => Partial<Pick<ClusterScenario, "network" | "watchLagMs" | "bucketFaults">>;
}

/** Network faults that every scenario but the swarm's draws keeps: small delays, no loss. */
const lanNetwork: SimNetworkFaults = { delayMs: [0, 2], lossRate: 0, duplicateRate: 0 };
const bucketLatency: SimFaults = { latencyMs: { min: 1, max: 20 } };

/** `count` events of one kind at steps drawn from the active part's first 80 %. */
function spread(
  rng: Rng,
  activeSteps: number,
  count: number,
  event: (rng: Rng) => ClusterEvent,
): ScheduledEvent[] {
  const events: ScheduledEvent[] = [];
  for (let i = 0; i < count; i++) {
    events.push({
      step: rng.int(Math.floor(activeSteps * 0.2), Math.floor(activeSteps * 0.8)),
      event: event(rng),
    });
  }
  return events.sort((a, b) => a.step - b.step);
}

function scenario(
  name: string,
  schedule: ClusterScenario["schedule"],
  faults: Partial<Pick<ClusterScenario, "network" | "watchLagMs" | "bucketFaults" | "draw">> = {},
): ClusterScenario {
  return { name, network: lanNetwork, watchLagMs: 2, bucketFaults: bucketLatency, schedule, ...faults };
}

/** The event kinds the swarm draws from, one per scenario. */
export const swarmEvents: readonly ((rng: Rng) => ClusterEvent)[] = [
  (rng) => ({
    kind: "crash",
    target: rng.chance(0.5) ? "leader" : "follower",
    wipe: false,
    downMs: rng.int(100, 4000),
  }),
  (rng) => ({ kind: "crashMidUpload", downMs: rng.int(100, 4000) }),
  (rng) => ({ kind: "isolate", ms: rng.int(1000, 6000) }),
  (rng) => ({ kind: "etcdCut", target: "follower", ms: rng.int(1000, 6000) }),
  (rng) => ({ kind: "etcdOutage", ms: rng.int(500, 4000) }),
  (rng) => ({ kind: "netCut", ms: rng.int(500, 4000) }),
  (rng) => ({ kind: "crash", target: "follower", wipe: true, downMs: rng.int(100, 2000) }),
  (rng) => ({ kind: "purgeDuringLeaderChange", downMs: rng.int(100, 3000) }),
  () => ({ kind: "recreateTopic" }),
];

/** The swarm's network, watch lag and bucket faults, from the seed. */
function drawFaults(rng: Rng): Partial<ClusterScenario> {
  const delayMaxMs = rng.int(0, 20);
  const rate = (max: number) => rng.nextFloat() * max;
  return {
    network: { delayMs: [0, delayMaxMs], lossRate: rate(0.03), duplicateRate: rate(0.03) },
    watchLagMs: rng.int(0, 50),
    bucketFaults: {
      latencyMs: { min: 1, max: rng.int(2, 100) },
      errorRates: {
        put: { transient: rate(0.1), throttle: rate(0.05), lostReply: rate(0.02) },
        get: { transient: rate(0.1), throttle: rate(0.05) },
        head: { transient: rate(0.05) },
        list: { transient: rate(0.05) },
        delete: { transient: rate(0.05) },
      },
    },
  };
}

/** A swarm of 1 to 4 events drawn from `events`, with `faults` (or faults drawn, with `draw`). */
export function swarmOf(
  name: string,
  events: readonly ((rng: Rng) => ClusterEvent)[],
  faults: Partial<Pick<ClusterScenario, "network" | "watchLagMs" | "bucketFaults" | "draw">>,
): ClusterScenario {
  return scenario(
    name,
    (rng, n) => spread(rng, n, rng.int(1, 4), (r) => events[r.int(0, events.length - 1)]!(r)),
    faults,
  );
}

export const clusterScenarios: Record<string, ClusterScenario> = {
  leader_crash_mid_upload: scenario(
    "leader_crash_mid_upload",
    (rng, n) => spread(rng, n, 2, (r) => ({ kind: "crashMidUpload", downMs: r.int(100, 3000) })),
  ),
  zombie_leader: scenario(
    "zombie_leader",
    (rng, n) => spread(rng, n, 1, (r) => ({ kind: "isolate", ms: r.int(3000, 8000) })),
  ),
  follower_behind_on_floor: scenario(
    "follower_behind_on_floor",
    (rng, n) => spread(rng, n, 1, (r) => ({ kind: "etcdCut", target: "follower", ms: r.int(4000, 10_000) })),
  ),
  replica_rebuilt: scenario(
    "replica_rebuilt",
    (rng, n) =>
      spread(rng, n, 1, (r) => ({ kind: "crash", target: "follower", wipe: true, downMs: r.int(100, 2000) })),
  ),
  etcd_unavailable: scenario(
    "etcd_unavailable",
    (rng, n) => spread(rng, n, 1, (r) => ({ kind: "etcdOutage", ms: r.int(1000, 5000) })),
  ),
  purge_during_leader_change: scenario(
    "purge_during_leader_change",
    (rng, n) => spread(rng, n, 1, (r) => ({ kind: "purgeDuringLeaderChange", downMs: r.int(100, 3000) })),
  ),
  topic_recreated: scenario(
    "topic_recreated",
    (rng, n) => spread(rng, n, 1, () => ({ kind: "recreateTopic" })),
  ),
  swarm: swarmOf("swarm", swarmEvents, { draw: drawFaults }),
};
