import type { PartitionAddress } from "../../log/partition/partition.ts";

/**
 * A follower's fetch from its leader, independent of the wire (the Kafka listener carries it as
 * Strata's ReplicaFetch API): per partition the offset the follower's log ends at and the epoch it
 * believes the leader holds; the answer is the leader's batches from there up to its log end (not
 * only its high watermark), its high watermark and log end, and where its segments start.
 */
export interface ReplicaFetchRequest {
  replicaId: number;
  /** How long the leader may wait for new batches when it has none. */
  maxWaitMs: number;
  maxBytes: number;
  partitions: ReplicaFetchPartitionRequest[];
}

export interface ReplicaFetchPartitionRequest {
  address: PartitionAddress;
  leaderEpoch: number;
  fetchOffset: number;
  /** The epoch of the follower's last batch (-1: none), checked against the leader's log. */
  lastFetchedEpoch: number;
}

export type ReplicaFetchError =
  | "none"
  /** The node does not lead the partition (any more, or not yet). */
  | "notLeader"
  /** The follower's epoch is older than the leader's: it must learn the new state first. */
  | "fencedEpoch"
  /** The follower's epoch is newer than the leader's: the leader has not heard of it yet. */
  | "unknownEpoch"
  /** The fetch offset is past the leader's log end: the follower's log diverged. */
  | "offsetOutOfRange"
  /** The leader could not read its log. */
  | "storage";

export interface ReplicaFetchPartitionResponse {
  address: PartitionAddress;
  error: ReplicaFetchError;
  highWatermark: number;
  logStartOffset: number;
  logEndOffset: number;
  /** Offsets, within the batches returned, at which the leader's segments start. */
  segmentStarts: number[];
  /**
   * Set when the follower's log diverges from the leader's: the leader's largest epoch at or below
   * the follower's last one, and where the leader's records of it end. The follower truncates
   * there (or lower, by its own epochs) and fetches again (KIP-101, KIP-279; the check rides in the
   * fetch, as KIP-595 has it).
   */
  divergingEpoch: { epoch: number; endOffset: number } | null;
  /** Whole batches, as the leader stores them. */
  records: Uint8Array[];
}

export interface ReplicaFetchResponse {
  /** "authentication": the request's node credentials were refused; nothing else was read. */
  error: "none" | "authentication";
  partitions: ReplicaFetchPartitionResponse[];
}

/** A connection to one leader node that carries replica fetches, one at a time. */
export interface LeaderLink {
  fetch(request: ReplicaFetchRequest): Promise<ReplicaFetchResponse>;
  close(): void;
}

/** Opens a link to the node reached at `kafkaAddress` ("host:port"). */
export type LeaderLinkFactory = (nodeId: number, kafkaAddress: string) => LeaderLink;
