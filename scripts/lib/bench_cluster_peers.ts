import type { ClusterNode } from "../../src/cluster/node/cluster_node.ts";
import { clusterPolling, startLocalCluster } from "./local_cluster.ts";
import { waitFor } from "../../test/helpers/wait_for.ts";

/**
 * The cluster mode of the pump benchmark: etcd (3 members) and two follower nodes (ids 2 and 3) as
 * processes of their own on the same machine, tiering to the same fs store as the measured node,
 * which runs in the benchmark's process as node 1 and leads the partitions the benchmark loads.
 */

export const benchClusterSecret = "bench-pump-cluster-secret";
/** `lease_ttl` of every node, milliseconds. */
export const benchLeaseTtlMs = 3000;

export interface BenchClusterPeers {
  /** The `[cluster]` and `[kafka]` settings of the measured node (TOML). */
  measuredConfig: string;
  stop(): Promise<void>;
}

/** Starts etcd and the followers; the measured node joins with `measuredConfig`. */
export async function startBenchClusterPeers(
  dir: string,
  portBase: number,
  objectsPath: string,
): Promise<BenchClusterPeers> {
  const peers = await startLocalCluster({
    portBase,
    dir: `${dir}/peers`,
    nodes: 2,
    firstNodeId: 2,
    leaseTtlMs: benchLeaseTtlMs,
    secret: benchClusterSecret,
    tieredFsPath: objectsPath,
  });
  const measuredConfig = [
    "[kafka]",
    `address = "127.0.0.1:${portBase + 31}"`,
    "[cluster]",
    "enabled = true",
    "node_id = 1",
    `etcd_endpoints = [${peers.endpoints.map((e) => `"${e}"`).join(", ")}]`,
    `lease_ttl = "${benchLeaseTtlMs} ms"`,
    `secret = "${benchClusterSecret}"`,
    "",
  ].join("\n");
  return { measuredConfig, stop: () => peers.stop() };
}

/** Waits until the measured node sees all three nodes live: a topic of 3 replicas counts them. */
export async function awaitThreeNodes(cluster: ClusterNode): Promise<void> {
  await waitFor("three live nodes", () => cluster.brokers().length === 3, {
    deadlineMs: 60_000,
    ...clusterPolling,
  });
}

/**
 * The partitions of a topic of `count × 3` partitions that node 1 leads: `count` of them, since
 * leaders go round the nodes from the topic's id (`assignReplicas`). Waits until the state of each
 * is in the node's view.
 */
export async function partitionsLedHere(
  cluster: ClusterNode,
  topic: { streamId: number; topicId: number; partitions: number },
): Promise<number[]> {
  const address = (p: number) => ({ streamId: topic.streamId, topicId: topic.topicId, partitionId: p });
  const all = Array.from({ length: topic.partitions }, (_, p) => p);
  await waitFor(
    "every partition's state",
    () => all.every((p) => cluster.partitionState(address(p)) !== null),
    { deadlineMs: 30_000, ...clusterPolling },
  );
  return all.filter((p) => cluster.partitionState(address(p))!.leader === cluster.nodeId);
}
