import type { Catalog } from "../broker/catalog.ts";
import { defaultTopicOptions } from "../broker/topic_options.ts";
import { AlreadyExistsError } from "../broker/broker_errors.ts";

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
    const stream = this.#catalog.streams().find((s) => s.name === this.streamName);
    return stream?.topics.some((t) => t.name === name) ? this.#info(name) : null;
  }

  /** Creates a topic with the server's defaults; throws the catalog's typed errors. */
  async createTopic(name: string, partitions: number): Promise<KafkaTopicInfo> {
    await this.#ensureStream();
    const options = defaultTopicOptions(this.#catalog.topicDefaults, partitions);
    await this.#catalog.createTopic(this.streamName, name, options);
    return this.#info(name);
  }

  #info(name: string): KafkaTopicInfo {
    const topic = this.#catalog.topic(this.streamName, name);
    return { name, partitionsOnline: topic.slots.map((s) => s.kind === "open") };
  }
}
