import type { LocalEnvelope } from "../log/local_retention.ts";
import { labelOf, type Partition } from "../log/partition.ts";
import type { TieredPartition } from "../tier/tiered_partition.ts";
import type { TopicMeta } from "./metadata.ts";

/** The topic of a hosted partition; its `meta` is replaced when the topic's options change. */
export interface HostedTopic {
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

  constructor(partition: Partition, topic: HostedTopic) {
    this.key = labelOf(partition.address);
    this.partition = partition;
    this.#topic = topic;
  }

  tiered(): boolean {
    return this.#topic.meta.options.tiered;
  }

  envelope(): LocalEnvelope {
    const options = this.#topic.meta.options;
    return { ageMs: options.localRetentionAgeMs, sizeBytes: options.localRetentionSizeBytes };
  }
}
