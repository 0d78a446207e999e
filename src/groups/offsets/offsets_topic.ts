import type { Catalog } from "../../broker/catalog/catalog.ts";
import type { DataPlane } from "../../broker/data_plane.ts";
import { InternalTopic } from "../../broker/internal_topic.ts";
import { offsetsTopicName } from "./offsets_log.ts";
import { decodeOffsetsRecord, encodeOffsetsRecord, type OffsetsRecord } from "./offsets_records.ts";

export interface OffsetsTopicDeps {
  catalog: Catalog;
  data: DataPlane;
  /** The Kafka stream, which holds the topic. */
  streamName: string;
  /** `[groups] offsets_topic_partitions`: the partitions of the topic when it is created. */
  partitions: number;
  /** `[groups] offsets_checkpoint_bytes`: the topic's segments are a quarter of it (at least 1 MiB). */
  checkpointBytes: number;
}

/** `__consumer_offsets` as an internal topic of the Kafka stream (`InternalTopic`). */
export function offsetsTopic(deps: OffsetsTopicDeps): InternalTopic<OffsetsRecord> {
  return new InternalTopic({
    ...deps,
    topicName: offsetsTopicName,
    codec: { encode: encodeOffsetsRecord, decode: decodeOffsetsRecord },
  });
}
