import type { PartitionAddress } from "../log/partition.ts";
import type { TopicOptions } from "./topic_options.ts";

/** A topic as the metadata stores it: its id names its directory and its objects. */
export interface TopicMeta {
  id: number;
  name: string;
  createdAtMs: number;
  options: TopicOptions;
}

/** A stream as the metadata stores it, with its topics and the id its next topic gets. */
export interface StreamMeta {
  id: number;
  name: string;
  createdAtMs: number;
  nextTopicId: number;
  topics: TopicMeta[];
}

/** The cluster's metadata document: the names-to-ids map and every topic's options. */
export interface Metadata {
  /** `storageFormatVersion`: 2. */
  version: number;
  clusterId: string;
  nextStreamId: number;
  streams: StreamMeta[];
}

/** True when the document names the partition: its topic exists and has that many partitions. */
export function namesPartition(doc: Readonly<Metadata>, address: PartitionAddress): boolean {
  const topic = doc.streams.find((s) => s.id === address.streamId)?.topics.find((t) =>
    t.id === address.topicId
  );
  return topic !== undefined && address.partitionId < topic.options.partitions;
}
