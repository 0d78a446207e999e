import type { PartitionAddress } from "../log/partition.ts";

/** Whether this node may serve a partition's produce and consumer reads now. */
export type Leadership =
  | {
    kind: "leader";
    leaderEpoch: number;
    /** In-sync replicas now, this one among them. */
    isrSize: number;
    /** `[cluster] min_insync_replicas`: an acks=all produce needs this many in sync. */
    minInsyncReplicas: number;
  }
  /** Another node leads (`leaderId`), or none does now (null): the client asks elsewhere or later. */
  | { kind: "notLeader"; leaderId: number | null };

/** How an acks=all produce's wait for its replicas ended. */
export type ReplicatedOutcome = "replicated" | "notEnoughReplicas" | "notLeader" | "timeout";

/**
 * Replication as the data plane sees it: who leads each partition, and when an append is held by
 * every in-sync replica. A single node leads everything and its appends are replicated once
 * written (`singleNode`); a cluster node answers from its replica manager.
 */
export interface Replication {
  /** True on a cluster node: the partitions have replicas on other nodes. */
  readonly clustered: boolean;
  leadership(address: PartitionAddress): Leadership;
  /**
   * Resolves once the partition's high watermark reaches `endOffset` with at least
   * `min_insync_replicas` in sync, or with why not: this node stopped leading, the in-sync set
   * shrank below the minimum, or `timeoutMs` passed.
   */
  awaitReplicated(
    address: PartitionAddress,
    endOffset: number,
    timeoutMs: number,
  ): Promise<ReplicatedOutcome>;
}

/** One node: it leads every partition, and a written append is as replicated as it gets. */
export const singleNode: Replication = {
  clustered: false,
  leadership: () => ({ kind: "leader", leaderEpoch: 0, isrSize: 1, minInsyncReplicas: 1 }),
  awaitReplicated: () => Promise.resolve("replicated"),
};
