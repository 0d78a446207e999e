import type { PartitionAddress } from "../../log/partition/partition.ts";
import type { PartitionSeed, RestoredChain } from "../../log/partition/seeded_partition.ts";
import type { RestoredFrom } from "../../log/partition/superblock.ts";
import { incarnationId } from "../../tier/bucket/object_keys.ts";
import type { TopicOptions } from "../catalog/topic_options.ts";
import {
  AlreadyExistsError,
  ReadReplicaTopicError,
  RemoteSegmentsExistError,
  ResourceNotFoundError,
  UnavailableError,
} from "../broker_errors.ts";

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
  /**
   * The first producer id no node has taken yet (`ProducerIds`): nodes take them in blocks, so an id
   * is never given twice in the cluster. Absent: none was taken.
   */
  nextProducerId?: number;
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

/**
 * The changes the catalog commits to the metadata document. Each reads the document it is given
 * and values passed to it that do not depend on any document, so a store may apply it again to a
 * newer document (`MetadataStore.commit`); each refuses, typed, when that document no longer
 * allows it, and changes nothing but the document.
 */

/** Adds a stream under the document's next stream id, and returns it; refuses a name taken. */
export function addStream(doc: Metadata, name: string, createdAtMs: number): StreamMeta {
  if (doc.streams.some((s) => s.name === name)) {
    throw new AlreadyExistsError(`Cannot create stream ${name}: it already exists`);
  }
  const stream: StreamMeta = { id: doc.nextStreamId, name, createdAtMs, nextTopicId: 1, topics: [] };
  doc.streams.push(stream);
  doc.nextStreamId = stream.id + 1;
  return stream;
}

/**
 * Adds a topic to the stream `streamId`. Its partitions were created under `topic.id` before the
 * commit, so that id must still be the stream's next one: when a newer document gave it to
 * another topic, the add is refused as transient (the caller removes what it created).
 */
export function addTopic(doc: Metadata, streamId: number, streamName: string, topic: TopicMeta): void {
  const stream = streamWithId(doc, streamId, streamName);
  if (stream.topics.some((t) => t.name === topic.name)) {
    throw new AlreadyExistsError(`Cannot create topic ${streamName}/${topic.name}: it already exists`);
  }
  if (stream.nextTopicId !== topic.id) {
    throw new UnavailableError(
      "transient",
      `Cannot create topic ${streamName}/${topic.name}: a concurrent change took topic id ${topic.id}`,
    );
  }
  stream.topics.push(topic);
  stream.nextTopicId = topic.id + 1;
}

/** What a topic's options change to, and what may refuse the change. */
export interface OptionsChange {
  streamId: number;
  topicId: number;
  /** "{stream}/{topic}", for refusals. */
  label: string;
  /** The new options, made of the document's current ones; may run more than once. */
  change: (current: TopicOptions) => TopicOptions;
  /** The topic has segments in the object store: tiering cannot be turned off. */
  hasRemoteSegments: boolean;
}

/** Sets the topic's options to what the change makes of the document's, and returns them. */
export function changeTopicOptions(doc: Metadata, c: OptionsChange): TopicOptions {
  const stream = doc.streams.find((s) => s.id === c.streamId);
  const topic = stream?.topics.find((t) => t.id === c.topicId);
  if (topic === undefined) throw new ResourceNotFoundError(`Cannot find topic ${c.label}`);
  refuseReadReplica(topic, c.label, "update topic");
  const options = c.change(topic.options);
  if (topic.options.tiered && !options.tiered && c.hasRemoteSegments) {
    throw new RemoteSegmentsExistError(`Cannot turn tiering off for ${c.label}: it has remote segments`);
  }
  topic.options = options;
  return options;
}

/** Refuses `what` on a read-replica topic: it is served read-only (docs/DESIGN.md, "Read replicas"). */
export function refuseReadReplica(topic: TopicMeta, label: string, what: string): void {
  const source = topic.options.readReplicaOf;
  if (source === null) return;
  throw new ReadReplicaTopicError(
    `Cannot ${what} ${label}: it is a read replica of ${source.stream}/${source.topic} of cluster ${source.clusterId}, served read-only`,
  );
}

/** Removes the stream `streamId` and its topics, if the document still has it. */
export function removeStream(doc: Metadata, streamId: number): void {
  doc.streams = doc.streams.filter((s) => s.id !== streamId);
}

/** Removes the topic `topicId` of the stream `streamId`, if the document still has it. */
export function removeTopic(doc: Metadata, streamId: number, topicId: number): void {
  const stream = doc.streams.find((s) => s.id === streamId);
  if (stream !== undefined) stream.topics = stream.topics.filter((t) => t.id !== topicId);
}

function streamWithId(doc: Metadata, streamId: number, streamName: string): StreamMeta {
  const stream = doc.streams.find((s) => s.id === streamId);
  if (stream === undefined) throw new ResourceNotFoundError(`Cannot find stream ${streamName}`);
  return stream;
}
