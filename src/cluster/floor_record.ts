import type { ControlCommand } from "../tier/control_log.ts";

/** A partition's committed floor as etcd stores it, with the epoch of the leader that wrote it. */
export interface FloorRecord {
  purgeGeneration: number;
  upToOffset: number;
  leaderEpoch: number;
}

/** The record as stored: JSON with fixed field names. */
export function encodeFloorRecord(command: ControlCommand, leaderEpoch: number): string {
  return JSON.stringify({
    purge_generation: command.purgeGeneration,
    up_to_offset: command.upToOffset,
    leader_epoch: leaderEpoch,
  });
}

/** Reads a stored record; one that is not is an error naming the key. */
export function decodeFloorRecord(key: string, value: string): FloorRecord {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(value);
  } catch (error) {
    throw new Error(`Cannot read the floor at ${key}: not JSON`, { cause: error });
  }
  const whole = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
  const { purge_generation: purgeGeneration, up_to_offset: upToOffset, leader_epoch: leaderEpoch } = json;
  if (!whole(purgeGeneration) || !whole(upToOffset) || !whole(leaderEpoch)) {
    throw new Error(`Cannot read the floor at ${key}: fields missing or of the wrong type`);
  }
  return { purgeGeneration, upToOffset, leaderEpoch };
}
