import { assert } from "../runtime/assert.ts";

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
  return state;
}

/** The state as stored: JSON with fixed field names. */
export function encodePartitionState(state: PartitionState): string {
  checkPartitionState(state);
  const { leader, leaderEpoch, isr, replicas } = state;
  return JSON.stringify({ leader, leader_epoch: leaderEpoch, isr, replicas });
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
  const { leader, leader_epoch: leaderEpoch, isr, replicas } = json;
  if (!Number.isInteger(leader) || !Number.isInteger(leaderEpoch) || !ids(isr) || !ids(replicas)) {
    throw new Error(`Cannot read the partition state at ${key}: fields missing or of the wrong type`);
  }
  return checkPartitionState({
    leader: leader as number,
    leaderEpoch: leaderEpoch as number,
    isr: isr as number[],
    replicas: replicas as number[],
  });
}
