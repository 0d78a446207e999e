import type { InternalLog } from "../../broker/internal_topic.ts";
import type { OffsetsRecord } from "./offsets_records.ts";

/** The name Kafka gives the internal topic of committed offsets and group metadata. */
export const offsetsTopicName = "__consumer_offsets";

/** The group coordinator's view of `__consumer_offsets` (`InternalLog`). */
export type OffsetsLog = InternalLog<OffsetsRecord>;
