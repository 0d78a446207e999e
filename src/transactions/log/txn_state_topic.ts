import type { Catalog } from "../../broker/catalog/catalog.ts";
import type { DataPlane } from "../../broker/data_plane.ts";
import { InternalTopic } from "../../broker/internal_topic.ts";
import { txnStateTopicName } from "./txn_log.ts";
import { decodeTxnRecord, encodeTxnRecord, type TxnLogRecord } from "./txn_records.ts";

export interface TxnStateTopicDeps {
  catalog: Catalog;
  data: DataPlane;
  /** The Kafka stream, which holds the topic. */
  streamName: string;
  /** `[transactions] state_topic_partitions`: the partitions of the topic when it is created. */
  partitions: number;
  /** `[transactions] state_checkpoint_bytes`: the topic's segments are a quarter of it (at least 1 MiB). */
  checkpointBytes: number;
}

/** `__transaction_state` as an internal topic of the Kafka stream (`InternalTopic`). */
export function txnStateTopic(deps: TxnStateTopicDeps): InternalTopic<TxnLogRecord> {
  return new InternalTopic({
    ...deps,
    topicName: txnStateTopicName,
    codec: { encode: encodeTxnRecord, decode: decodeTxnRecord },
  });
}
