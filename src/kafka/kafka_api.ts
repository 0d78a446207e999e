import type { DataPlane } from "../broker/data_plane.ts";
import type { ProducerIds } from "../broker/producer_ids.ts";
import type { GroupCoordinator } from "../groups/group_coordinator.ts";
import type { TxnCoordinator } from "../transactions/txn_coordinator.ts";
import type { LocalMarkerWriter } from "../transactions/markers/local_marker_writer.ts";
import type { PartitionState } from "../cluster/controller/partition_state.ts";
import type { ReplicaManager } from "../cluster/replication/replica_manager.ts";
import type { PartitionAddress } from "../log/partition/partition.ts";
import type { Clock } from "../runtime/clock/clock.ts";
import type { Logger } from "../runtime/logger.ts";
import type { ApiVersionRange } from "./apis/api_versions_codec.ts";
import type { KafkaCatalog } from "./kafka_catalog.ts";
import type { KafkaReader } from "./wire/kafka_codec.ts";
import type { MetadataBroker } from "./apis/metadata_codec.ts";
import type { RequestHeader } from "./wire/frame_codec.ts";

/** What every API's handler may use: the topics, this broker as clients reach it, the settings. */
export interface KafkaServing {
  catalog: KafkaCatalog;
  /** Produce, fetch and offsets, addressed in the Kafka stream (`catalog.streamName`). */
  data: DataPlane;
  /** This node, at its advertised address. */
  broker: MetadataBroker;
  /** `[kafka] auto_create_topics`. */
  autoCreateTopics: boolean;
  /** `[kafka] default_partitions`: of a topic created on first use. */
  defaultPartitions: number;
  /** `[kafka] users`: SASL/PLAIN passwords by name; empty: no authentication. */
  users: ReadonlyMap<string, string>;
  /** The APIs served, as ApiVersions answers them. */
  ranges: readonly ApiVersionRange[];
  /** In a cluster: the other nodes, the partitions' leaders, and replication; null on a single node. */
  cluster: KafkaClusterServing | null;
  /** The consumer groups' coordinator; null: every group request is COORDINATOR_NOT_AVAILABLE. */
  groups: GroupCoordinator | null;
  /** Ids for idempotent producers (InitProducerId); null: InitProducerId is COORDINATOR_NOT_AVAILABLE. */
  producerIds: ProducerIds | null;
  /** The transaction coordinator; null: every transactional request is COORDINATOR_NOT_AVAILABLE. */
  transactions: TxnCoordinator | null;
  /** Writes the markers other nodes' coordinators send for partitions led here; null: none are. */
  txnMarkers: LocalMarkerWriter | null;
  /** The connection's peer as "host:port" ("" before a session sets it): a group member's client host. */
  remoteAddress: string;
  clock: Clock;
  logger: Logger;
}

/** What the listener of a cluster's node answers from: the cluster's nodes and partition states. */
export interface KafkaClusterServing {
  nodeId: number;
  replicas: ReplicaManager;
  /** Whether `token` is node `nodeId`'s credential (`[cluster] secret`). */
  verifyNode(nodeId: number, token: string): boolean;
  /** The live nodes at their advertised Kafka addresses. */
  brokers(): MetadataBroker[];
  /** The controller's node id, or -1 when none holds the seat. */
  controllerId(): number;
  partitionState(address: PartitionAddress): PartitionState | null;
}

/**
 * A response's pieces (header and body), how many error codes it carries (for the metric), and
 * what to call once it is written.
 */
export interface KafkaAnswer {
  pieces: readonly Uint8Array[];
  errorCount: number;
  release?: () => void;
  /** Close the connection once this is written, for this reason. */
  closeAfter?: string;
}

/**
 * One Kafka API as the listener serves it: its key, its name in metrics and logs, the versions it
 * answers, and its handler, which reads the body and answers, or answers null (no response).
 */
export interface KafkaApi {
  apiKey: number;
  name: string;
  minVersion: number;
  maxVersion: number;
  handle(header: RequestHeader, body: KafkaReader, serving: KafkaServing): Promise<KafkaAnswer | null>;
}
