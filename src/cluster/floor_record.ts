import type { ControlCommand } from "../tier/control/control_log.ts";
import type { AdvanceDeletedUpTo, AdvanceTieredFloor } from "../log/retention/floor_state.ts";

/**
 * A tiered partition's committed control state as etcd stores it: the floor, the watermark total
 * retention deleted below, and the epoch of the leader that wrote either last.
 */
export interface FloorRecord {
  purgeGeneration: number;
  upToOffset: number;
  deletedUpToOffset: number;
  leaderEpoch: number;
}

/** The record as stored: JSON with fixed field names. */
export function encodeFloorRecord(record: FloorRecord): string {
  return JSON.stringify({
    purge_generation: record.purgeGeneration,
    up_to_offset: record.upToOffset,
    deleted_up_to_offset: record.deletedUpToOffset,
    leader_epoch: record.leaderEpoch,
  });
}

/** Reads a stored record (one without a deleted watermark has 0); one that is not is an error naming the key. */
export function decodeFloorRecord(key: string, value: string): FloorRecord {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(value);
  } catch (error) {
    throw new Error(`Cannot read the floor at ${key}: not JSON`, { cause: error });
  }
  const whole = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
  const { purge_generation: purgeGeneration, up_to_offset: upToOffset, leader_epoch: leaderEpoch } = json;
  const deletedUpToOffset = json.deleted_up_to_offset ?? 0;
  if (!whole(purgeGeneration) || !whole(upToOffset) || !whole(leaderEpoch) || !whole(deletedUpToOffset)) {
    throw new Error(`Cannot read the floor at ${key}: fields missing or of the wrong type`);
  }
  return { purgeGeneration, upToOffset, deletedUpToOffset, leaderEpoch };
}

/**
 * The record after `command`, written by the leader of `leaderEpoch`; null when the command moves
 * nothing (committed already, or overtaken: applying either field is a max, so it is a no-op). A
 * later purge generation starts the record over; an earlier one never changes it.
 */
export function recordAfter(
  current: FloorRecord | null,
  command: AdvanceTieredFloor | AdvanceDeletedUpTo,
  leaderEpoch: number,
): FloorRecord | null {
  if (current !== null && command.purgeGeneration < current.purgeGeneration) return null;
  const fresh = current === null || command.purgeGeneration > current.purgeGeneration;
  const base = fresh
    ? { purgeGeneration: command.purgeGeneration, upToOffset: 0, deletedUpToOffset: 0, leaderEpoch }
    : current!;
  const field = command.kind === "advance_tiered_floor" ? "upToOffset" : "deletedUpToOffset";
  if (!fresh && command.upToOffset <= base[field]) return null;
  return { ...base, [field]: Math.max(base[field], command.upToOffset), leaderEpoch };
}

/** The commands a stored record stands for, as every replica applies them: the floor, then the watermark. */
export function commandsOf(partition: string, record: FloorRecord): ControlCommand[] {
  const { purgeGeneration } = record;
  const floor: ControlCommand = {
    kind: "advance_tiered_floor",
    partition,
    purgeGeneration,
    upToOffset: record.upToOffset,
  };
  if (record.deletedUpToOffset === 0) return [floor];
  return [floor, {
    kind: "advance_deleted_up_to",
    partition,
    purgeGeneration,
    upToOffset: record.deletedUpToOffset,
  }];
}
