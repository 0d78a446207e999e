import { assert } from "../../runtime/assert.ts";

/** No leader: every in-sync replica is gone, and the partition waits for one to return. */
export const noLeader = -1;

/**
 * A partition's replication state as the controller writes it to etcd: who leads, under which
 * epoch, which replicas hold it and which of them are in sync. The leader is one of `isr` (or
 * `noLeader`), `isr` is a subset of `replicas`, and `leaderEpoch` only grows.
 */
export interface PartitionState {
  leader: number;
  leaderEpoch: number;
  isr: number[];
  replicas: number[];
  /**
   * The registration (its node key's create revision) of the leader's process when it was given
   * the epoch: a later process of the same node does not lead under it. Absent in states written
   * before it existed.
   */
  leaderSession?: number;
  /**
   * Replicas that left the in-sync set while it was smaller than `min_insync_replicas`: no
   * acks=all write was acknowledged without them since, so each holds every acknowledged record
   * and may be elected when no in-sync replica is live (KIP-966's eligible leader replicas).
   * Absent when empty.
   */
  eligible?: number[];
}

/** Asserts the state's invariants; every state written or read goes through it. */
export function checkPartitionState(state: PartitionState): PartitionState {
  assert(
    Number.isInteger(state.leaderEpoch) && state.leaderEpoch >= 0,
    `Bad leader epoch ${state.leaderEpoch}`,
  );
  assert(state.replicas.length >= 1, "A partition has at least one replica");
  assert(new Set(state.replicas).size === state.replicas.length, `Replicas repeat: ${state.replicas}`);
  assert(
    state.isr.every((id) => state.replicas.includes(id)),
    `In-sync ${state.isr} not within ${state.replicas}`,
  );
  assert(new Set(state.isr).size === state.isr.length, `In-sync replicas repeat: ${state.isr}`);
  assert(
    state.leader === noLeader || state.isr.includes(state.leader),
    `Leader ${state.leader} is not in sync (${state.isr})`,
  );
  const eligible = state.eligible ?? [];
  assert(
    eligible.every((id) => state.replicas.includes(id) && !state.isr.includes(id)),
    `Eligible ${eligible} not replicas outside the in-sync set ${state.isr}`,
  );
  assert(new Set(eligible).size === eligible.length, `Eligible replicas repeat: ${eligible}`);
  return state;
}

/** The state without the optional fields it does not use: no `leaderSession` unset, no empty `eligible`. */
export function tidyPartitionState(state: PartitionState): PartitionState {
  const { leaderSession, eligible, ...rest } = state;
  return {
    ...rest,
    ...(leaderSession === undefined ? {} : { leaderSession }),
    ...(eligible === undefined || eligible.length === 0 ? {} : { eligible }),
  };
}

/**
 * The state with the in-sync set `isr`: replicas that leave it while it is (then) smaller than
 * `minInsyncReplicas` (or the replicas, when fewer) become eligible; once it is back at the minimum, acknowledgements go on
 * without the eligible ones, which stop being so.
 */
export function withInSync(
  state: PartitionState,
  isr: readonly number[],
  minInsyncReplicas: number,
): PartitionState {
  const left = state.isr.filter((id) => !isr.includes(id));
  const kept = (state.eligible ?? []).filter((id) => !isr.includes(id));
  const enough = isr.length >= Math.min(minInsyncReplicas, state.replicas.length);
  const eligible = enough ? [] : [...new Set([...kept, ...left])];
  return checkPartitionState(tidyPartitionState({ ...state, isr: [...isr], eligible }));
}

/** The state as stored: JSON with fixed field names. */
export function encodePartitionState(state: PartitionState): string {
  checkPartitionState(state);
  const { leader, leaderEpoch, isr, replicas, leaderSession, eligible } = state;
  return JSON.stringify({
    leader,
    leader_epoch: leaderEpoch,
    isr,
    replicas,
    ...(leaderSession === undefined ? {} : { leader_session: leaderSession }),
    ...(eligible === undefined || eligible.length === 0 ? {} : { eligible }),
  });
}

/** Reads a stored state; a value that is not one is an error naming the key. */
export function decodePartitionState(key: string, value: string): PartitionState {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(value);
  } catch (error) {
    throw new Error(`Cannot read the partition state at ${key}: not JSON`, { cause: error });
  }
  const ids = (v: unknown) => Array.isArray(v) && v.every((id) => Number.isInteger(id) && id > 0);
  const { leader, leader_epoch: leaderEpoch, isr, replicas, leader_session: leaderSession, eligible } = json;
  if (!Number.isInteger(leader) || !Number.isInteger(leaderEpoch) || !ids(isr) || !ids(replicas)) {
    throw new Error(`Cannot read the partition state at ${key}: fields missing or of the wrong type`);
  }
  if (
    (leaderSession !== undefined && !Number.isInteger(leaderSession)) ||
    (eligible !== undefined && !ids(eligible))
  ) {
    throw new Error(
      `Cannot read the partition state at ${key}: leader_session or eligible of the wrong type`,
    );
  }
  return checkPartitionState(tidyPartitionState({
    leader: leader as number,
    leaderEpoch: leaderEpoch as number,
    isr: isr as number[],
    replicas: replicas as number[],
    leaderSession: leaderSession as number | undefined,
    eligible: eligible as number[] | undefined,
  }));
}
