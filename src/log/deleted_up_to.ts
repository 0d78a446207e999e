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
