import type { Catalog } from "../broker/catalog/catalog.ts";
import type { DataPlane } from "../broker/data_plane.ts";
import type { ProducerIds } from "../broker/producer_ids.ts";
import type { ShardRuntime } from "../broker/shards/shard_runtime.ts";
import type { ClusterNode } from "../cluster/node/cluster_node.ts";
import { nodeToken } from "../cluster/node/node_token.ts";
import type { Config } from "../config/config.ts";
import type { GroupCoordinator } from "../groups/group_coordinator.ts";
import { endTxnOffsets } from "../groups/core/txn_offsets.ts";
import { offsetsTopicName } from "../groups/offsets/offsets_log.ts";
import type { Clock } from "../runtime/clock/clock.ts";
import type { Logger } from "../runtime/logger.ts";
import { txnStateTopic } from "../transactions/log/txn_state_topic.ts";
import {
  ClusterMarkerWriter,
  type RemoteMarkerWriter,
} from "../transactions/markers/cluster_marker_writer.ts";
import { LocalMarkerWriter } from "../transactions/markers/local_marker_writer.ts";
import { TxnCoordinator, type TxnMarkerWriter } from "../transactions/txn_coordinator.ts";
import { registerTxnMetrics } from "../transactions/txn_metrics.ts";
import type { Registry } from "prom-client";

/** Opens a link to another node for transaction markers: (this node's credential) → (peer, its Kafka address). */
export type MarkerLinkFactory = (
  nodeId: number,
  token: string,
) => (peerId: number, address: string) => RemoteMarkerWriter & { close(): void };

export interface TransactionsDeps {
  config: Config;
  catalog: Catalog;
  data: DataPlane;
  shards: readonly ShardRuntime[];
  producerIds: ProducerIds;
  /** The group coordinator, which takes the markers of `__consumer_offsets` partitions; null: none. */
  groups: GroupCoordinator | null;
  /** This node's part in a cluster, and its links to the others for markers; null on a single node. */
  cluster: { node: ClusterNode; markerLinks: MarkerLinkFactory } | null;
  clock: Clock;
  logger: Logger;
  registry: Registry;
}

/**
 * The transactions of the Kafka stream: `__transaction_state` over the broker, and the transaction
 * coordinator driven from shard 0's tick. Markers go through this node's data plane (those of
 * `__consumer_offsets` partitions to the group coordinator, for the transactions' offsets), and in a
 * cluster to the node that leads each partition. The topic is created when a transactional id first
 * needs it (the first FindCoordinator for one), as Kafka creates it. Returns the coordinator and the
 * writer of the markers led here, which other nodes' coordinators send too.
 */
export function openTransactions(
  deps: TransactionsDeps,
): { coordinator: TxnCoordinator; local: LocalMarkerWriter } {
  const { config, catalog, data, clock, logger, groups } = deps;
  const t = config.transactions;
  const streamName = config.kafka.stream;
  const local = new LocalMarkerWriter({
    data,
    streamName,
    clock,
    logger,
    coordinated: groups === null ? null : {
      topicName: offsetsTopicName,
      write: (partition, marker) => endTxnOffsets(groups, partition, marker),
    },
  });
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
    markers: deps.cluster === null ? local : clusterMarkers(deps, local),
  });
  deps.shards[0]!.pump.onTick("transactions", (nowMs) => coordinator.onTick(nowMs));
  registerTxnMetrics(deps.registry, coordinator);
  return { coordinator, local };
}

/** Markers by partition leader: here through `local`, elsewhere through one link per live node. */
function clusterMarkers(deps: TransactionsDeps, local: LocalMarkerWriter): TxnMarkerWriter {
  const { node, markerLinks } = deps.cluster!;
  const nodeId = deps.config.cluster.nodeId;
  const open = markerLinks(nodeId, nodeToken(deps.config.cluster.secret, nodeId));
  // At most one link per node of the cluster: one whose address changed is replaced.
  const links = new Map<number, { address: string; link: RemoteMarkerWriter & { close(): void } }>();
  const streamName = deps.config.kafka.stream;
  return new ClusterMarkerWriter({
    nodeId,
    local,
    leaderOf: (topic, partition) => {
      const meta = deps.catalog.findTopic(streamName, topic);
      if (meta === null) return null;
      const address = { streamId: meta.streamId, topicId: meta.meta.id, partitionId: partition };
      return node.partitionState(address)?.leader ?? null;
    },
    remote: (peerId) => {
      const broker = node.brokers().find((b) => b.nodeId === peerId);
      if (broker === undefined) return null;
      const address = `${broker.host}:${broker.port}`;
      const held = links.get(peerId);
      if (held !== undefined && held.address === address) return held.link;
      held?.link.close();
      const link = open(peerId, address);
      links.set(peerId, { address, link });
      return link;
    },
  });
}
