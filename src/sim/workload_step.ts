import type { Rng } from "../runtime/rng.ts";
import type { Scenario } from "./scenarios.ts";

/** How a sabotaged object is damaged: lost from the store, or one of its bytes flipped. */
export type Damage = { kind: "lose" } | { kind: "corrupt"; byteIndex: number };

/** An evicted segment whose object the scenario damages. */
export interface SabotageTarget {
  startOffset: number;
  endOffset: number;
  /** The store key of the segment's log object. */
  key: string;
  damage: Damage;
}

/** One step of the workload, with everything it drew from the workload's `Rng`. */
export type WorkloadStep =
  /** The process dies; `wipe` also loses the data directory (a new incarnation begins). */
  | { kind: "crash"; wipe: boolean }
  /** Every message goes, offsets start again at 0 under a new generation. */
  | { kind: "purge" }
  /** The topic is deleted and created again under its name. */
  | { kind: "delete_topic" }
  /** The store loses an evicted segment's object or flips one of its bytes; null when none has one. */
  | { kind: "sabotage"; target: SabotageTarget | null }
  /** A consumer stores its offset. */
  | { kind: "store_consumer_offset"; consumer: string; offset: number }
  /** The topic's options change: tiering off or on, the local size envelope smaller or larger. */
  | { kind: "change_options"; tiered: boolean; localSizeBytes: number | null }
  /** A producer appends `count` messages. */
  | { kind: "produce"; count: number }
  /** A consumer polls from `offset` (local or evicted). */
  | { kind: "poll"; offset: number }
  /** 10 ms of virtual time pass, with the shard's tick. */
  | { kind: "advance" };

/** What drawing a step reads of the world; nothing is changed by reading it. */
export interface WorkloadView {
  /** The scenario's events still strike (the faults have not stopped). */
  active: boolean;
  scenario: Scenario;
  /** The log's first retained offset and the next one it assigns. */
  logRange(): { firstOffset: number; nextOffset: number };
  /** Evicted segments the scenario has not damaged yet, in log order. */
  undamagedRemoteSegments(): readonly { startOffset: number; endOffset: number }[];
  /** The key and size of a segment's log object in the store; null when the store has none. */
  storedLog(startOffset: number): { key: string; sizeBytes: number } | null;
}

/**
 * Where one roll in [0, 1) falls picks among the workload's own steps: below each bound its step,
 * from 0.5 up virtual time passes.
 */
const consumerOffsetBelow = 0.03;
const changeOptionsBelow = 0.04;
const produceBelow = 0.35;
const pollBelow = 0.5;
/** The local size envelopes the workload switches between (null: unlimited). */
const localSizesBytes = [0, 32 * 1024, 64 * 1024, 256 * 1024, null];

/**
 * Draws the next step. The scenario's events come first, each with its chance while the run is
 * active; otherwise one roll picks among the workload's own steps. The draws' order and number
 * decide every later step of the seed.
 */
export function drawStep(rng: Rng, view: WorkloadView): WorkloadStep {
  const roll = rng.nextFloat();
  const { active, scenario } = view;
  if (active && rng.chance(scenario.crashChance)) return { kind: "crash", wipe: false };
  if (active && rng.chance(scenario.purgeChance ?? 0)) return { kind: "purge" };
  if (active && rng.chance(scenario.wipeDataChance ?? 0)) return { kind: "crash", wipe: true };
  if (active && rng.chance(scenario.deleteTopicChance ?? 0)) return { kind: "delete_topic" };
  if (active && rng.chance(scenario.sabotageChance ?? 0)) {
    return { kind: "sabotage", target: drawSabotageTarget(rng, view) };
  }
  if (roll < consumerOffsetBelow) {
    const consumer = `consumer-${rng.int(0, 2)}`;
    return { kind: "store_consumer_offset", consumer, offset: drawOffset(rng, view) };
  }
  if (roll < changeOptionsBelow && active) {
    const tiered = rng.chance(0.8);
    const localSizeBytes = localSizesBytes[rng.int(0, localSizesBytes.length - 1)]!;
    return { kind: "change_options", tiered, localSizeBytes };
  }
  if (roll < produceBelow) return { kind: "produce", count: rng.int(1, 3) };
  if (roll < pollBelow) return { kind: "poll", offset: drawOffset(rng, view) };
  return { kind: "advance" };
}

/** A random offset of the log, its next offset included. */
function drawOffset(rng: Rng, view: WorkloadView): number {
  const { firstOffset, nextOffset } = view.logRange();
  return rng.int(firstOffset, Math.max(firstOffset, nextOffset));
}

/** One evicted, undamaged segment with an object in the store, and what happens to that object. */
function drawSabotageTarget(rng: Rng, view: WorkloadView): SabotageTarget | null {
  const remote = view.undamagedRemoteSegments();
  if (remote.length === 0) return null;
  const segment = remote[rng.int(0, remote.length - 1)]!;
  const stored = view.storedLog(segment.startOffset);
  if (stored === null) return null;
  const damage: Damage = rng.chance(0.5) ? { kind: "lose" } : {
    kind: "corrupt",
    byteIndex: rng.int(0, stored.sizeBytes - 1),
  };
  return { startOffset: segment.startOffset, endOffset: segment.endOffset, key: stored.key, damage };
}
