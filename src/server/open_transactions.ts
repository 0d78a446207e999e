import type { Catalog } from "../broker/catalog/catalog.ts";
import type { DataPlane } from "../broker/data_plane.ts";
import type { ProducerIds } from "../broker/producer_ids.ts";
import type { ShardRuntime } from "../broker/shards/shard_runtime.ts";
import type { Config } from "../config/config.ts";
import type { Clock } from "../runtime/clock/clock.ts";
import type { Logger } from "../runtime/logger.ts";
import { txnStateTopic } from "../transactions/log/txn_state_topic.ts";
import { LocalMarkerWriter } from "../transactions/markers/local_marker_writer.ts";
import { TxnCoordinator } from "../transactions/txn_coordinator.ts";

export interface TransactionsDeps {
  config: Config;
  catalog: Catalog;
  data: DataPlane;
  shards: readonly ShardRuntime[];
  producerIds: ProducerIds;
  clock: Clock;
  logger: Logger;
}

/**
 * The transactions of the Kafka stream: `__transaction_state` over the broker, and the transaction
 * coordinator driven from shard 0's tick, writing markers through this node's data plane. The
 * topic is created when a transactional id first needs it (the first FindCoordinator for one), as
 * Kafka creates it.
 */
export function openTransactions(deps: TransactionsDeps): TxnCoordinator {
  const { config, catalog, data, clock, logger } = deps;
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
    markers: new LocalMarkerWriter({ data, streamName, clock, logger }),
  });
  deps.shards[0]!.pump.onTick("transactions", (nowMs) => coordinator.onTick(nowMs));
  return coordinator;
}
