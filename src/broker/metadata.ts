import type { PartitionAddress } from "../log/partition.ts";
import type { PartitionSeed, RestoredChain } from "../log/seeded_partition.ts";
import type { RestoredFrom } from "../log/superblock.ts";
import { incarnationId } from "../tier/object_keys.ts";
import type { TopicOptions } from "./topic_options.ts";

/** A topic as the metadata stores it: its id names its directory and its objects. */
export interface TopicMeta {
  id: number;
  name: string;
  createdAtMs: number;
  options: TopicOptions;
  /** Set on a topic restored from the bucket: whose objects its partitions' oldest segments are. */
  restoredFrom?: TopicRestoredFrom;
}

/** A restore's topic: where it came from, and each partition's seed (null: it starts empty). */
export interface TopicRestore {
  from: TopicRestoredFrom;
  seeds: readonly (PartitionSeed | null)[];
}

/** The topic a restore read, and the incarnation of each partition it took (docs/DESIGN.md, "Restore"). */
export interface TopicRestoredFrom {
  /** A read replica's source bucket when it is not the server's own. */
  bucket?: string;
  clusterId: string;
  streamId: number;
  topicId: number;
  incarnations: RestoredIncarnation[];
}

/** A restored partition's source incarnation, and where the chain the restore took ends. */
export interface RestoredIncarnation {
  partitionId: number;
  createdRevision: string;
  purgeGeneration: number;
  /**
   * Exclusive: the restore took the source's chain that ends just below it, which every replica of a
   * cluster seeds from. Absent in a restore recorded before it was kept.
   */
  belowOffset?: number;
  /** Where the restored chain starts; absent: wherever the source's objects start. */
  fromOffset?: number;
  /** One above the highest leader epoch the restored chain's batches carry; absent: 0. */
  firstLeaderEpoch?: number;
}

/** The epoch a topic's first leaders take in a cluster: above every epoch its restored segments carry. */
export function firstLeaderEpochOf(meta: TopicMeta): number {
  return Math.max(0, ...(meta.restoredFrom?.incarnations ?? []).map((i) => i.firstLeaderEpoch ?? 0));
}

/** The chain a restored topic's partition `partitionId` seeds from; null when it has none. */
export function restoredChainOf(meta: TopicMeta, partitionId: number): RestoredChain | null {
  const from = meta.restoredFrom;
  const i = from?.incarnations.find((x) => x.partitionId === partitionId);
  if (from === undefined || i === undefined || i.belowOffset === undefined) return null;
  const source: RestoredFrom = {
    clusterId: from.clusterId,
    streamId: from.streamId,
    topicId: from.topicId,
    partitionId,
    createdRevision: i.createdRevision,
    purgeGeneration: i.purgeGeneration,
    belowOffset: i.belowOffset,
  };
  return { source, fromOffset: i.fromOffset ?? 0 };
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

/**
 * The incarnations of this cluster that restored topics read their oldest segments from
 * (`incarnationId`): GC and the orphan sweep keep them, whatever became of their own partitions.
 */
export function referencedIncarnations(doc: Readonly<Metadata>): Set<string> {
  const referenced = new Set<string>();
  for (const topic of doc.streams.flatMap((s) => s.topics)) {
    const from = topic.restoredFrom;
    if (from === undefined || from.clusterId !== doc.clusterId || from.bucket !== undefined) continue;
    for (const i of from.incarnations) {
      const address = { streamId: from.streamId, topicId: from.topicId, partitionId: i.partitionId };
      referenced.add(incarnationId(address, i.createdRevision, i.purgeGeneration));
    }
  }
  return referenced;
}

/** True when the document names the partition: its topic exists and has that many partitions. */
export function namesPartition(doc: Readonly<Metadata>, address: PartitionAddress): boolean {
  const topic = doc.streams.find((s) => s.id === address.streamId)?.topics.find((t) =>
    t.id === address.topicId
  );
  return topic !== undefined && address.partitionId < topic.options.partitions;
}
