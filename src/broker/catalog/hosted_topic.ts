import type { LocalEnvelope } from "../../log/retention/local_retention.ts";
import { labelOf, type Partition } from "../../log/partition/partition.ts";
import type { TieredPartition } from "../../tier/tier_service.ts";
import type { TopicFacts } from "../../tier/bucket/topic_manifest.ts";
import type { TopicMeta } from "../metadata/metadata.ts";

/** The topic of a hosted partition; its `meta` is replaced when the topic's options change. */
export interface HostedTopic {
  readonly streamName: string;
  readonly meta: TopicMeta;
}

/**
 * A hosted partition as its shard's tier service sees it: whether its topic is tiered and its
 * local envelope are read from the topic at each use, so that a PATCH applies at once.
 */
export class HostedTieredPartition implements TieredPartition {
  readonly key: string;
  readonly partition: Partition;
  readonly #topic: HostedTopic;
  /** The facts last built, and the metadata they were built from. */
  #facts: { meta: TopicMeta; facts: TopicFacts } | null = null;

  constructor(partition: Partition, topic: HostedTopic) {
    this.key = labelOf(partition.address);
    this.partition = partition;
    this.#topic = topic;
  }

  tiered(): boolean {
    return this.#topic.meta.options.tiered;
  }

  /** Partition 0's topic, for the topic manifest: a new object only once the topic's metadata changed. */
  topicFacts(): TopicFacts | null {
    if (this.partition.address.partitionId !== 0) return null;
    const meta = this.#topic.meta;
    if (this.#facts?.meta !== meta) {
      const facts = {
        streamName: this.#topic.streamName,
        topicName: meta.name,
        createdAtMs: meta.createdAtMs,
        options: { ...meta.options },
        ...(meta.restoredFrom === undefined ? {} : {
          restoredFrom: {
            clusterId: meta.restoredFrom.clusterId,
            streamId: meta.restoredFrom.streamId,
            topicId: meta.restoredFrom.topicId,
          },
        }),
      };
      this.#facts = { meta, facts };
    }
    return this.#facts.facts;
  }

  envelope(): LocalEnvelope {
    const options = this.#topic.meta.options;
    return { ageMs: options.localRetentionAgeMs, sizeBytes: options.localRetentionSizeBytes };
  }
}
