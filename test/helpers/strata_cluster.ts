import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Test } from "tap";
import { type EtcdCluster, startEtcd } from "./harnesses/etcd_harness.ts";
import { kcat } from "./kafka/kcat.ts";
import { brokersListed } from "../../scripts/lib/kafka_metadata.ts";
import type { S3Endpoint } from "./harnesses/s3_harness.ts";
import { type RunningServer, spawnServer } from "./spawn_server.ts";
import { tempDir } from "./temp_dir.ts";
import { realTime, waitFor } from "./wait_for.ts";

/** The secret every node of a test cluster shares. */
export const testClusterSecret = "strata-test-cluster-secret";

/** One Strata node of a test cluster: a real `deno run` process. */
export interface ClusterNodeProcess {
  id: number;
  httpUrl: string;
  kafka: string;
  configPath: string;
  server: RunningServer | null;
  /** Sends `signal` (SIGKILL by default) and waits for the exit, or, for SIGSTOP and SIGCONT, only sends it. */
  signal(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the node again on its data directory. */
  restart(): Promise<void>;
}

export interface StrataCluster {
  etcd: EtcdCluster;
  nodes: ClusterNodeProcess[];
  /** "host:port,host:port,host:port": every node's Kafka listener. */
  bootstrap: string;
  node(id: number): ClusterNodeProcess;
}

export interface ClusterOptions {
  /**
   * etcd's ports are `portBase + 1..3` and `+ 11..13`; node n's HTTP `+ 20 + n`, Kafka `+ 30 + n`.
   * Below 32768, where the system's ephemeral ports (other tests' port 0) start.
   */
  portBase: number;
  nodes?: number;
  leaseTtl?: string;
  replicaLagMax?: string;
  minInsyncReplicas?: number;
  /** Tiered storage on this S3 bucket for every node, uploads paced at `uploadBandwidth`; absent: none. */
  tiered?: { store: S3Endpoint; bucket: string; uploadBandwidth?: string };
  /** `[groups]` lines (`key = value`) for every node; absent: the defaults. */
  groups?: string[];
  /** `[tiered_storage.housekeeping]` lines for every node, with `tiered`; absent: the defaults. */
  housekeeping?: string[];
  /** The "host:port" node `id` advertises for its Kafka listener (a proxy before it); absent: the listener's. */
  advertisedKafka?: (id: number) => string;
}

/**
 * Starts a throw-away 3-member etcd and `nodes` Strata nodes on loopback, each with its own data
 * directory and config, and stops them all when the test ends.
 */
export async function startStrataCluster(t: Test, options: ClusterOptions): Promise<StrataCluster> {
  const etcd = startEtcd(t, options.portBase);
  const dir = tempDir(t, "strata-cluster-");
  const count = options.nodes ?? 3;
  const nodes: ClusterNodeProcess[] = [];
  for (let id = 1; id <= count; id++) {
    const http = `127.0.0.1:${options.portBase + 20 + id}`;
    const kafka = `127.0.0.1:${options.portBase + 30 + id}`;
    const configPath = join(dir, `node${id}.toml`);
    writeFileSync(configPath, nodeConfig(join(dir, `data${id}`), http, kafka, id, etcd.endpoints, options));
    const node: ClusterNodeProcess = {
      id,
      httpUrl: `http://${http}`,
      kafka,
      configPath,
      server: null,
      signal: async (signal = "SIGKILL") => {
        const server = node.server;
        if (server === null) return;
        if (signal === "SIGSTOP" || signal === "SIGCONT") {
          server.child.kill(signal);
          return;
        }
        node.server = null;
        await server.stop(signal);
      },
      restart: async () => {
        const credentials: Record<string, string> = options.tiered === undefined ? {} : {
          AWS_ACCESS_KEY_ID: options.tiered.store.accessKeyId,
          AWS_SECRET_ACCESS_KEY: options.tiered.store.secretAccessKey,
        };
        node.server = await spawnServer(["--config", configPath], {
          STRATA_KAFKA_ADDRESS: kafka,
          ...credentials,
        });
      },
    };
    nodes.push(node);
  }
  t.teardown(async () => {
    for (const node of nodes) {
      node.server?.child.kill("SIGCONT");
      await node.signal("SIGKILL");
    }
  });
  // With a bucket, one node at a time: s3rver's files race when its boot probes write and delete
  // under one prefix at once (it crashes on ENOENT).
  if (options.tiered === undefined) await Promise.all(nodes.map((n) => n.restart()));
  else for (const node of nodes) await node.restart();
  // Every node listening is not every node registered: wait until each one's Metadata lists them all.
  await waitFor("every node to see the whole cluster", async () => {
    const counts = await Promise.all(nodes.map((n) => brokersListed(n.kafka)));
    return counts.every((c) => c === count);
  }, { deadlineMs: 20_000, pace: realTime(50) });
  return {
    etcd,
    nodes,
    bootstrap: nodes.map((n) => n.kafka).join(","),
    node: (id) => nodes.find((n) => n.id === id)!,
  };
}

function nodeConfig(
  dataPath: string,
  http: string,
  kafka: string,
  id: number,
  endpoints: string[],
  options: ClusterOptions,
): string {
  return [
    "[system]",
    `path = "${dataPath}"`,
    `fsync = "interval"`,
    "[http]",
    `address = "${http}"`,
    "[kafka]",
    `address = "${kafka}"`,
    ...(options.advertisedKafka === undefined
      ? []
      : [`advertised_address = "${options.advertisedKafka(id)}"`]),
    ...tieredSection(options.tiered),
    ...(options.housekeeping === undefined ? [] : ["[tiered_storage.housekeeping]", ...options.housekeeping]),
    ...(options.groups === undefined ? [] : ["[groups]", ...options.groups]),
    "[cluster]",
    "enabled = true",
    `node_id = ${id}`,
    `etcd_endpoints = [${endpoints.map((e) => `"${e}"`).join(", ")}]`,
    `lease_ttl = "${options.leaseTtl ?? "2 s"}"`,
    `replica_lag_max = "${options.replicaLagMax ?? "10 s"}"`,
    `min_insync_replicas = ${options.minInsyncReplicas ?? 2}`,
    `secret = "${testClusterSecret}"`,
    "",
  ].join("\n");
}

function tieredSection(tiered: ClusterOptions["tiered"]): string[] {
  if (tiered === undefined) return ["[tiered_storage]", "enabled = false"];
  return [
    "[tiered_storage]",
    "enabled = true",
    `backend = "s3"`,
    `upload_bandwidth = "${tiered.uploadBandwidth ?? "unlimited"}"`,
    "[tiered_storage.s3]",
    `bucket = "${tiered.bucket}"`,
    `endpoint = "${tiered.store.endpoint}"`,
  ];
}

/** Partition 0 of `topic` read whole through kcat from whichever node leads: offset to value. */
export async function readPartition(brokers: string, topic: string): Promise<Map<number, string>> {
  const args = ["-C", "-b", brokers, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%o %s\\n"];
  const read = await kcat(args);
  if (read.code !== 0) throw new Error(`kcat could not read ${topic}: ${read.stderr}`);
  const records = new Map<number, string>();
  for (const line of read.stdout.split("\n").filter((l) => l !== "")) {
    const space = line.indexOf(" ");
    records.set(Number(line.slice(0, space)), line.slice(space + 1));
  }
  return records;
}

/** The directory of partition `partition` of topic `topicId` of the first stream on `node`. */
export function partitionDirOf(node: ClusterNodeProcess, topicId = 1, partition = 0): string {
  return join(node.configPath, "..", `data${node.id}`, `streams/1/topics/${topicId}/partitions/${partition}`);
}

/** The `.log` files of partition 0 of the cluster's first topic on node `node`, by name. */
function segmentFiles(node: ClusterNodeProcess): Map<string, Buffer> {
  const dir = partitionDirOf(node);
  return new Map(
    readdirSync(dir).filter((f) => f.endsWith(".log")).map((f) => [f, readFileSync(join(dir, f))]),
  );
}

/** Whether every node holds the same segment files, byte for byte, for that partition. */
export function sameSegmentsEverywhere(cluster: StrataCluster): boolean {
  const [first, ...rest] = cluster.nodes.map(segmentFiles);
  return rest.every((f) =>
    f.size === first!.size && [...first!].every(([name, bytes]) => f.get(name)?.equals(bytes))
  );
}
