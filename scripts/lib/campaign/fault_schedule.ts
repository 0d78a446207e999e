import { Rng } from "../../../src/runtime/rng.ts";

/**
 * The nemesis of a fault campaign, as a pure function of its seed: which fault comes when, and for
 * how long it holds. The same seed gives the same schedule, so a run is replayed from its seed; the
 * node a fault strikes (the leader, a follower) is resolved when it starts, from the cluster's
 * metadata at that moment.
 */

export type FaultKind =
  /** SIGKILL the partition's leader; restart it when the fault ends. */
  | "kill_leader"
  /** SIGKILL one follower; restart it when the fault ends. */
  | "kill_follower"
  /** SIGKILL the leader and a follower at once: one replica is left. */
  | "kill_leader_and_follower"
  /** SIGSTOP the leader (it is fenced when the pause outlasts its lease); SIGCONT at the end. */
  | "pause_leader"
  /** SIGSTOP one follower; SIGCONT at the end. */
  | "pause_follower"
  /** SIGKILL one etcd member (its majority stays); restart it at the end. */
  | "kill_etcd_member";

export const faultKinds: readonly FaultKind[] = [
  "kill_leader",
  "kill_follower",
  "kill_leader_and_follower",
  "pause_leader",
  "pause_follower",
  "kill_etcd_member",
];

export interface FaultStep {
  /** Milliseconds after the campaign's start at which the fault begins, at the earliest. */
  startMs: number;
  kind: FaultKind;
  /** Milliseconds the fault holds before it is healed. */
  holdMs: number;
  /** Which follower, or which etcd member, by index among the candidates (modulo their count). */
  pick: number;
}

export interface ScheduleOptions {
  seed: number;
  /** No fault starts later than this, nor holds past it. */
  durationMs: number;
  leaseTtlMs: number;
  /** Milliseconds of undisturbed load before the first fault. */
  warmupMs?: number;
}

/** Faults in one schedule at most, whatever its duration. */
export const faultStepsMax = 200;

/** Milliseconds of quiet between one fault's end and the next one's start: from, to. */
const gapMs = [500, 2500] as const;

function holdMsOf(kind: FaultKind, rng: Rng, leaseTtlMs: number): number {
  // A leader's pause outlasts its lease, so that it is fenced and another node leads; a follower's
  // pause is sometimes shorter than the replica lag limit and sometimes not.
  if (kind === "pause_leader") return rng.int(2 * leaseTtlMs, 3 * leaseTtlMs);
  if (kind === "pause_follower") return rng.int(Math.floor(leaseTtlMs / 2), 3 * leaseTtlMs);
  return rng.int(250, 2 * leaseTtlMs);
}

/** The seed's schedule: faults one after another, each followed by a quiet gap, all within `durationMs`. */
export function faultSchedule(options: ScheduleOptions): FaultStep[] {
  const rng = new Rng(options.seed);
  const steps: FaultStep[] = [];
  let atMs = options.warmupMs ?? 1000;
  while (steps.length < faultStepsMax) {
    const kind = faultKinds[rng.int(0, faultKinds.length - 1)]!;
    const holdMs = holdMsOf(kind, rng, options.leaseTtlMs);
    if (atMs + holdMs > options.durationMs) break;
    steps.push({ startMs: atMs, kind, holdMs, pick: rng.int(0, 1) });
    atMs += holdMs + rng.int(gapMs[0], gapMs[1]);
  }
  return steps;
}
