import { assert } from "../../runtime/assert.ts";

/**
 * The tiered-floor state machine of one partition, fed by the shard's control log (docs/DESIGN.md,
 * "The tiered floor"). It holds one value (and the generation it belongs to). Applying a
 * command is pure and deterministic, so any replica applying the same log reaches the same floor.
 */
export interface FloorState {
  purgeGeneration: number;
  /** Exclusive: every offset below it is durable in the object store. */
  tieredUpToOffset: number;
}

/** `AdvanceTieredFloor`: submitted after both objects of a segment are in the store. */
export interface AdvanceTieredFloor {
  kind: "advance_tiered_floor";
  partition: string;
  purgeGeneration: number;
  upToOffset: number;
}

export type FloorOutcome =
  | "advanced"
  /** Already at or past it: applying is max(current, up_to). */
  | "unchanged"
  /** From another purge generation: an upload that raced a purge. */
  | "rejected_generation"
  /** Beyond the partition's committed end: the control log is not ordered with the data log, so this is checked. */
  | "rejected_beyond_end";

export function applyAdvanceTieredFloor(
  state: FloorState,
  command: AdvanceTieredFloor,
  committedEndOffset: number,
): { state: FloorState; outcome: FloorOutcome } {
  assertFloorState(state);
  assert(Number.isSafeInteger(committedEndOffset) && committedEndOffset >= 0, "a committed end is an offset");
  // The tier service submits a segment's end + 1: a whole offset, whatever its generation.
  assert(Number.isSafeInteger(command.upToOffset), "a floor command names a whole offset");
  if (command.purgeGeneration !== state.purgeGeneration) return { state, outcome: "rejected_generation" };
  if (command.upToOffset > committedEndOffset) return { state, outcome: "rejected_beyond_end" };
  if (command.upToOffset <= state.tieredUpToOffset) return { state, outcome: "unchanged" };
  return { state: { ...state, tieredUpToOffset: command.upToOffset }, outcome: "advanced" };
}

/** A purge starts a new generation at floor 0. */
export function resetForPurge(state: FloorState): FloorState {
  assertFloorState(state);
  return { purgeGeneration: state.purgeGeneration + 1, tieredUpToOffset: 0 };
}

function assertFloorState(state: FloorState): void {
  assert(
    Number.isSafeInteger(state.purgeGeneration) && state.purgeGeneration >= 0,
    "a purge generation is a count",
  );
  assert(
    Number.isSafeInteger(state.tieredUpToOffset) && state.tieredUpToOffset >= 0,
    "the tiered floor is an offset, not negative",
  );
}

/**
 * `AdvanceDeletedUpTo`: in a cluster, the leader of a tiered partition commits the watermark its
 * total retention deleted below, and every replica deletes its own segments below it
 * (docs/DESIGN.md, "Tiering across replicas"). Replicas never decide total retention themselves,
 * so they delete what their leader deleted, at the same segment boundaries.
 */
export interface AdvanceDeletedUpTo {
  kind: "advance_deleted_up_to";
  partition: string;
  purgeGeneration: number;
  /** Exclusive: every offset below it is deleted. */
  upToOffset: number;
}

export type DeletedUpToOutcome =
  /** Segments below it were deleted, and the superblock's watermark rose. */
  | "advanced"
  /** At or past it already. */
  | "unchanged"
  /** Of another purge generation. */
  | "rejected_generation";
