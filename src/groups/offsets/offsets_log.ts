import type { OffsetsRecord } from "./offsets_records.ts";

/** The name Kafka gives the internal topic of committed offsets and group metadata. */
export const offsetsTopicName = "__consumer_offsets";

/**
 * The group coordinator's view of `__consumer_offsets`: whether this node leads each partition, and
 * the partition's records, appended (acknowledged once every in-sync replica holds them) and read
 * back. `OffsetsTopic` serves it from the broker; tests serve it from memory.
 */
export interface OffsetsLog {
  /** The topic's partitions, or null while it does not exist. */
  partitionCount(): number | null;
  /** Creates the topic when it does not exist; resolves once it does. */
  ensure(): Promise<void>;
  /** This node's leader epoch of the partition while it leads it; null while another node does or none. */
  leaderEpoch(partition: number): number | null;
  /** Appends the records; resolves once every in-sync replica holds them. */
  append(partition: number, records: readonly OffsetsRecord[]): Promise<AppendedRecords>;
  /**
   * Reads every record of the partition from its log start to its end, in order, each to `visit`.
   * Takes turns of the loop as it goes.
   */
  replay(partition: number, visit: (record: OffsetsRecord) => void): Promise<ReplayedRecords>;
  /** Deletes the partition's sealed segments that end below `offset` (whatever was written again above it). */
  trimBelow(partition: number, offset: number): Promise<void>;
}

export interface AppendedRecords {
  /** The offset of the first record appended. */
  baseOffset: number;
  /** The keys' and values' bytes. */
  bytes: number;
}

export interface ReplayedRecords {
  /** The offset after the last record read. */
  nextOffset: number;
  /** The keys' and values' bytes read. */
  bytes: number;
}
