import type { Catalog } from "../broker/catalog/catalog.ts";
import { InvalidNameError } from "../broker/broker_errors.ts";
import { checkName } from "../broker/catalog/names.ts";
import type { KafkaConfig } from "../config/config.ts";
import { ConfigError } from "../config/config_error.ts";
import type { Clock } from "../runtime/clock/clock.ts";
import type { Logger } from "../runtime/logger.ts";
import type { Registry } from "../runtime/metrics/metrics.ts";
import type { ListenAddress, Network } from "../runtime/network/network.ts";
import { apiVersionsApi } from "./apis/api_versions_api.ts";
import type { KafkaApi, KafkaClusterServing, KafkaServing } from "./kafka_api.ts";
import { replicaFetchApi } from "./replica/replica_fetch_api.ts";
import { KafkaCatalog } from "./kafka_catalog.ts";
import { KafkaListener } from "./kafka_listener.ts";
import { KafkaMetrics } from "./kafka_metrics.ts";
import { apisByKey, KafkaRequestSession, servedRanges } from "./kafka_session.ts";
import type { MetadataBroker } from "./apis/metadata_codec.ts";
import { metadataApi } from "./apis/metadata_api.ts";
import { findCoordinatorApi } from "./apis/find_coordinator_api.ts";
import { createTopicsApi } from "./apis/create_topics_api.ts";
import { deleteTopicsApi } from "./apis/delete_topics_api.ts";
import { describeConfigsApi } from "./apis/describe_configs_api.ts";
import { saslAuthenticateApi, saslHandshakeApi } from "./apis/sasl_api.ts";
import { produceApi } from "./apis/produce_api.ts";
import { initProducerIdApi } from "./apis/init_producer_id_api.ts";
import { describeProducersApi } from "./apis/describe_producers_api.ts";
import type { ProducerIds } from "../broker/producer_ids.ts";
import { fetchApi } from "./apis/fetch_api.ts";
import { listOffsetsApi } from "./apis/list_offsets_api.ts";
import { heartbeatApi, joinGroupApi, leaveGroupApi, syncGroupApi } from "./groups/group_membership_api.ts";
import {
  deleteGroupsApi,
  describeGroupsApi,
  listGroupsApi,
  offsetCommitApi,
  offsetFetchApi,
} from "./groups/group_admin_api.ts";
import type { DataPlane } from "../broker/data_plane.ts";
import type { GroupCoordinator } from "../groups/group_coordinator.ts";
import type { TxnCoordinator } from "../transactions/txn_coordinator.ts";
import type { LocalMarkerWriter } from "../transactions/markers/local_marker_writer.ts";
import { nodeTxnMarkersApi } from "./txn/node_txn_markers_api.ts";
import { describeTransactionsApi, listTransactionsApi } from "./txn/txn_views_api.ts";
import { addOffsetsToTxnApi, addPartitionsToTxnApi, endTxnApi, txnOffsetCommitApi } from "./txn/txn_apis.ts";

/** The Kafka broker id of a node that is not in a cluster. */
export const standaloneNodeId = 1;

/** Every API the listener serves, in key order. */
export const kafkaApis: readonly KafkaApi[] = [
  produceApi,
  fetchApi,
  listOffsetsApi,
  metadataApi,
  offsetCommitApi,
  offsetFetchApi,
  findCoordinatorApi,
  joinGroupApi,
  heartbeatApi,
  leaveGroupApi,
  syncGroupApi,
  describeGroupsApi,
  listGroupsApi,
  saslHandshakeApi,
  apiVersionsApi,
  createTopicsApi,
  deleteTopicsApi,
  initProducerIdApi,
  addPartitionsToTxnApi,
  addOffsetsToTxnApi,
  endTxnApi,
  txnOffsetCommitApi,
  describeConfigsApi,
  saslAuthenticateApi,
  deleteGroupsApi,
  describeProducersApi,
  describeTransactionsApi,
  listTransactionsApi,
];

export interface KafkaServiceDeps {
  config: KafkaConfig;
  catalog: Catalog;
  data: DataPlane;
  network: Network;
  registry: Registry;
  clock: Clock;
  /** The process's piece gate (`PieceGate.turn`): reads and writes of large frames take turns. */
  turn: () => Promise<void>;
  logger: Logger;
  /** In a cluster, what the listener answers for the cluster and serves replica fetches from. */
  cluster?: KafkaClusterServing | null;
  /** The consumer groups' coordinator (`StrataServer.groups`); absent: groups are not served. */
  groups?: GroupCoordinator | null;
  /** Ids for idempotent producers (`StrataServer.producerIds`); absent: idempotent producers are not served. */
  producerIds?: ProducerIds | null;
  /** The transaction coordinator (`StrataServer.transactions`); absent: transactions are not served. */
  transactions?: TxnCoordinator | null;
  /** The markers written here for other nodes' coordinators (`StrataServer.txnMarkers`). */
  txnMarkers?: LocalMarkerWriter | null;
}

/** APIs served to the cluster's own nodes only, never advertised by ApiVersions. */
const internalApis: readonly KafkaApi[] = [replicaFetchApi, nodeTxnMarkersApi];

/**
 * Opens the Kafka listener of `[kafka]`: checks its stream's name, listens, and serves every
 * connection with a session over the stream's topics, advertising `advertised_address` (or the
 * address listened on).
 */
export async function openKafkaListener(deps: KafkaServiceDeps): Promise<KafkaListener> {
  const { config, logger } = deps;
  try {
    checkName("stream", config.stream);
  } catch (error) {
    if (error instanceof InvalidNameError) {
      throw new ConfigError("[kafka] stream", error.message, { cause: error });
    }
    throw error;
  }
  const catalog = new KafkaCatalog(deps.catalog, config.stream);
  const socket = await deps.network.listen(config.address);
  const serving: KafkaServing = {
    catalog,
    data: deps.data,
    broker: advertisedBroker(config, socket.address, deps.cluster ?? null),
    autoCreateTopics: config.autoCreateTopics,
    defaultPartitions: config.defaultPartitions,
    users: config.users,
    ranges: servedRanges(kafkaApis),
    cluster: deps.cluster ?? null,
    groups: deps.groups ?? null,
    producerIds: deps.producerIds ?? null,
    transactions: deps.transactions ?? null,
    txnMarkers: deps.txnMarkers ?? null,
    remoteAddress: "",
    clock: deps.clock,
    logger,
  };
  const metrics = new KafkaMetrics(deps.registry);
  const apis = apisByKey(deps.cluster ? [...kafkaApis, ...internalApis] : kafkaApis);
  return new KafkaListener(socket, {
    limits: {
      maxFrameBytes: config.maxFrameBytes,
      requestsInFlightMax: config.requestsInFlightPerConnectionMax,
      idleTimeoutMs: config.connectionIdleTimeoutMs,
    },
    connectionsMax: config.connectionsMax,
    openSession: (remote) => new KafkaRequestSession(apis, serving, metrics, remote),
    metrics,
    clock: deps.clock,
    turn: deps.turn,
    logger,
  });
}

function advertisedBroker(
  config: KafkaConfig,
  bound: ListenAddress,
  cluster: KafkaClusterServing | null,
): MetadataBroker {
  const { hostname, port } = config.advertisedAddress ?? bound;
  return { nodeId: cluster?.nodeId ?? standaloneNodeId, host: hostname, port, rack: null };
}
