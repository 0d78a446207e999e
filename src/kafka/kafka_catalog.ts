import type { Catalog } from "../broker/catalog/catalog.ts";
import {
  defaultTopicOptions,
  type TopicDefaults,
  type TopicOptions,
} from "../broker/catalog/topic_options.ts";
import { AlreadyExistsError } from "../broker/broker_errors.ts";
import type { PartitionAddress } from "../log/partition/partition.ts";

/** A Kafka topic as the listener answers for it: its name and whether each partition is served. */
export interface KafkaTopicInfo {
  name: string;
  /** By partition id: true when the partition is open, false when it was refused at boot. */
  partitionsOnline: readonly boolean[];
}

/**
 * The topics Kafka clients see: those of one stream of the catalog (`[kafka] stream`), which is
 * created with the first topic. Creation goes through the catalog like any other, with the server's
 * defaults for what Kafka leaves unsaid.
 */
export class KafkaCatalog {
  readonly streamName: string;
  readonly #catalog: Catalog;

  constructor(catalog: Catalog, streamName: string) {
    this.#catalog = catalog;
    this.streamName = streamName;
  }

  get clusterId(): string {
    return this.#catalog.clusterId;
  }

  /** Creates the stream when it does not exist yet: with the first topic Kafka creates. */
  async #ensureStream(): Promise<void> {
    if (this.#catalog.streams().some((s) => s.name === this.streamName)) return;
    try {
      await this.#catalog.createStream(this.streamName);
    } catch (error) {
      if (!(error instanceof AlreadyExistsError)) throw error;
    }
  }

  topics(): KafkaTopicInfo[] {
    const stream = this.#catalog.streams().find((s) => s.name === this.streamName);
    return (stream?.topics ?? []).map((t) => this.#info(t.name));
  }

  topic(name: string): KafkaTopicInfo | null {
    return this.has(name) ? this.#info(name) : null;
  }

  /** Whether the topic exists: one map lookup, for the produce and fetch paths. */
  has(name: string): boolean {
    return this.#catalog.findTopic(this.streamName, name) !== null;
  }

  /** The server's defaults for what a new topic leaves unsaid. */
  get topicDefaults(): TopicDefaults {
    return this.#catalog.topicDefaults;
  }

  /** Creates a topic with the server's defaults; throws the catalog's typed errors. */
  createTopic(name: string, partitions: number): Promise<KafkaTopicInfo> {
    return this.createTopicWith(name, defaultTopicOptions(this.#catalog.topicDefaults, partitions));
  }

  /** Creates a topic with `options`; throws the catalog's typed errors. */
  async createTopicWith(name: string, options: TopicOptions): Promise<KafkaTopicInfo> {
    await this.#ensureStream();
    await this.#catalog.createTopic(this.streamName, name, options);
    return this.#info(name);
  }

  /** Deletes a topic; throws the catalog's typed errors (ResourceNotFoundError when absent). */
  deleteTopic(name: string): Promise<void> {
    return this.#catalog.deleteTopic(this.streamName, name);
  }

  /** Where a topic's partition lives (its stream and topic ids), or null when the topic does not exist. */
  partitionAddress(name: string, partitionId: number): PartitionAddress | null {
    const topic = this.#catalog.findTopic(this.streamName, name);
    return topic === null ? null : { streamId: topic.streamId, topicId: topic.meta.id, partitionId };
  }

  /** A topic's options, or null when it does not exist. */
  options(name: string): TopicOptions | null {
    return this.#catalog.findTopic(this.streamName, name)?.meta.options ?? null;
  }

  #info(name: string): KafkaTopicInfo {
    const topic = this.#catalog.topic(this.streamName, name);
    return { name, partitionsOnline: topic.slots.map((s) => s.kind === "open") };
  }
}
