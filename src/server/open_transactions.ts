import type { Catalog } from "../broker/catalog/catalog.ts";
import type { DataPlane } from "../broker/data_plane.ts";
import type { ProducerIds } from "../broker/producer_ids.ts";
import type { ShardRuntime } from "../broker/shards/shard_runtime.ts";
import type { Config } from "../config/config.ts";
import type { Clock } from "../runtime/clock/clock.ts";
import type { Logger } from "../runtime/logger.ts";
import { txnStateTopic } from "../transactions/log/txn_state_topic.ts";
import type { GroupCoordinator } from "../groups/group_coordinator.ts";
import { endTxnOffsets } from "../groups/core/txn_offsets.ts";
import { offsetsTopicName } from "../groups/offsets/offsets_log.ts";
import { LocalMarkerWriter } from "../transactions/markers/local_marker_writer.ts";
import { TxnCoordinator } from "../transactions/txn_coordinator.ts";

export interface TransactionsDeps {
  config: Config;
  catalog: Catalog;
  data: DataPlane;
  shards: readonly ShardRuntime[];
  producerIds: ProducerIds;
  /** The group coordinator, which takes the markers of `__consumer_offsets` partitions; null: none. */
  groups: GroupCoordinator | null;
  clock: Clock;
  logger: Logger;
}

/**
 * The transactions of the Kafka stream: `__transaction_state` over the broker, and the transaction
 * coordinator driven from shard 0's tick, writing markers through this node's data plane (those of
 * `__consumer_offsets` partitions to the group coordinator, for the transactions' offsets). The
 * topic is created when a transactional id first needs it (the first FindCoordinator for one), as
 * Kafka creates it.
 */
export function openTransactions(deps: TransactionsDeps): TxnCoordinator {
  const { config, catalog, data, clock, logger, groups } = deps;
  const t = config.transactions;
  const streamName = config.kafka.stream;
  const coordinator = new TxnCoordinator({
    log: txnStateTopic({
      catalog,
      data,
      streamName,
      partitions: t.stateTopicPartitions,
      checkpointBytes: t.stateCheckpointBytes,
    }),
    clock,
    logger,
    settings: {
      transactionMaxTimeoutMs: config.kafka.transactionMaxTimeoutMs,
      transactionalIdExpirationMs: config.kafka.transactionalIdExpirationMs,
      partitionsPerTransactionMax: t.partitionsPerTransactionMax,
      transactionalIdsMax: t.transactionalIdsMax,
      openTransactionsMax: t.openTransactionsMax,
      checkpointBytes: t.stateCheckpointBytes,
    },
    producerIds: deps.producerIds,
    markers: new LocalMarkerWriter({
      data,
      streamName,
      clock,
      logger,
      coordinated: groups === null ? null : {
        topicName: offsetsTopicName,
        write: (partition, marker) => endTxnOffsets(groups, partition, marker),
      },
    }),
  });
  deps.shards[0]!.pump.onTick("transactions", (nowMs) => coordinator.onTick(nowMs));
  return coordinator;
}
