import type { ClusterNode } from "./cluster/node/cluster_node.ts";
import type { KafkaClusterServing } from "./kafka/kafka_api.ts";
import { ReplicaLink } from "./kafka/replica/replica_link.ts";
import { MarkerLink } from "./kafka/txn/marker_link.ts";
import type { Clock } from "./runtime/clock/clock.ts";
import type { Network } from "./runtime/network/network.ts";
import type { ClusterIo } from "./server/server.ts";

/** How long a follower waits for its leader's listener to accept a connection. */
const replicaConnectTimeoutMs = 2000;
/** How long past its own wait a replica fetch's answer may take before the follower gives up on it. */
const replicaAnswerTimeoutMs = 5000;

/** How long a transaction's markers may take on the node that leads their partitions (acks all there). */
const markerAnswerTimeoutMs = 65_000;

/** How a cluster node reaches etcd (the runtime's `fetch`) and its peers (replica and marker links over `network`). */
export function clusterIo(network: Network, clock: Clock, maxFrameBytes: number): ClusterIo {
  return {
    fetch: (url, init) => fetch(url, init),
    leaderLinks: (token) => (_nodeId, address) =>
      new ReplicaLink({
        network,
        clock,
        address,
        token,
        connectTimeoutMs: replicaConnectTimeoutMs,
        answerTimeoutMs: replicaAnswerTimeoutMs,
        maxFrameBytes,
      }),
    markerLinks: (nodeId, token) => (_peerId, address) =>
      new MarkerLink({
        network,
        clock,
        address,
        nodeId,
        token,
        connectTimeoutMs: replicaConnectTimeoutMs,
        answerTimeoutMs: markerAnswerTimeoutMs,
        maxFrameBytes,
      }),
  };
}

/** What the Kafka listener answers for the cluster, from this node's part in it. */
export function kafkaClusterServing(cluster: ClusterNode | null): KafkaClusterServing | null {
  if (cluster === null) return null;
  return {
    nodeId: cluster.nodeId,
    replicas: cluster.replicas,
    verifyNode: (nodeId, token) => cluster.verifyNode(nodeId, token),
    brokers: () => cluster.brokers().map((b) => ({ ...b, rack: null })),
    controllerId: () => cluster.controllerId(),
    partitionState: (address) => cluster.partitionState(address),
  };
}
