import type { LocalEnvelope } from "../log/local_retention.ts";
import type { Partition } from "../log/partition.ts";
import type { TopicFacts } from "./topic_manifest.ts";

/** A partition as the tier service sees it: its log and superblock, and its topic's options. */
export interface TieredPartition {
  /** "{stream}/{topic}/{partition}" by id. */
  key: string;
  partition: Partition;
  /** Read at each use: topic options may change. */
  tiered(): boolean;
  /** The topic's local envelope, read at each use. */
  envelope(): LocalEnvelope;
  /**
   * Partition 0's topic's facts for the topic manifest, a new object only when they changed; null
   * (or absent) for other partitions and where no topic manifest is kept.
   */
  topicFacts?(): TopicFacts | null;
}
