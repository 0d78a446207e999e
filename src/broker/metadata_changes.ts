import {
  AlreadyExistsError,
  ReadReplicaTopicError,
  RemoteSegmentsExistError,
  ResourceNotFoundError,
  UnavailableError,
} from "./broker_errors.ts";
import type { Metadata, StreamMeta, TopicMeta } from "./metadata.ts";
import type { TopicOptions } from "./topic_options.ts";

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
