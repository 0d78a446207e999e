import { type ServerProcess, startServerProcess } from "./server_process.ts";
import { realTime } from "../../test/helpers/wait_for.ts";

/**
 * A Strata cluster on loopback for benchmarks and fault campaigns: a 3-member etcd started by
 * scripts/etcd-cluster.sh and `nodes` Strata nodes, each a real `deno task server` process with its
 * own data directory and config. etcd's client ports are `portBase + 1..3` (peer ports `+ 11..13`),
 * node n's HTTP port `portBase + 20 + n` and its Kafka port `portBase + 30 + n`.
 */

export interface LocalClusterOptions {
  /** From 20000 to 32000: below the system's ephemeral ports. */
  portBase: number;
  dir: string;
  nodes: number;
  leaseTtlMs: number;
  secret: string;
  minInsyncReplicas?: number;
  replicaLagMaxMs?: number;
  /** The first node's id (1 unless given): the nodes are numbered from it. */
  firstNodeId?: number;
  /** Tiered storage on this S3 bucket for every node; absent: none. */
  tiered?: LocalBucket;
  /** Tiered storage on an fs store in this directory, shared by every node (instead of `tiered`). */
  tieredFsPath?: string;
  /** More `[tiered_storage]` settings (TOML lines), e.g. `upload_bandwidth = "32 MiB"`. */
  tieredSettings?: string[];
  /** `[tiered_storage.housekeeping]` settings (TOML lines). */
  housekeepingSettings?: string[];
}

/** An S3 bucket the nodes tier to. */
export interface LocalBucket {
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** One node: its addresses, and its process while it runs. */
export interface LocalNode {
  readonly id: number;
  readonly kafka: string;
  readonly http: string;
  process: ServerProcess | null;
  /** Whether the process is stopped by SIGSTOP. */
  paused: boolean;
}

export interface LocalCluster {
  readonly endpoints: string[];
  readonly nodes: LocalNode[];
  /** Every node's Kafka listener, comma-separated. */
  readonly bootstrap: string;
  node(id: number): LocalNode;
  /** SIGKILLs the node and waits for its exit. */
  kill(node: LocalNode): Promise<void>;
  /** Starts the node again on its data directory and waits until it listens. */
  restart(node: LocalNode): Promise<void>;
  /** SIGSTOP, or SIGCONT. */
  pause(node: LocalNode): void;
  resume(node: LocalNode): void;
  /** SIGKILLs etcd member `member` (1 to 3), or starts it again on its data directory. */
  killEtcdMember(member: number): Promise<void>;
  restartEtcdMember(member: number): Promise<void>;
  /** Kills every node and stops etcd. */
  stop(): Promise<void>;
}

/** Milliseconds a starting node may take to listen. */
const nodeListenTimeoutMs = 60_000;

function nodeConfig(options: LocalClusterOptions, node: LocalNode, endpoints: string[]): string {
  return [
    "[system]",
    `path = "${options.dir}/data${node.id}"`,
    `fsync = "interval"`,
    "[http]",
    `address = "${node.http}"`,
    "[kafka]",
    `address = "${node.kafka}"`,
    ...tieredConfig(options),
    "[cluster]",
    "enabled = true",
    `node_id = ${node.id}`,
    `etcd_endpoints = [${endpoints.map((e) => `"${e}"`).join(", ")}]`,
    `lease_ttl = "${options.leaseTtlMs} ms"`,
    `min_insync_replicas = ${options.minInsyncReplicas ?? 2}`,
    `replica_lag_max = "${options.replicaLagMaxMs ?? 10_000} ms"`,
    `secret = "${options.secret}"`,
    "",
  ].join("\n");
}

/** The `[tiered_storage]` sections of a node's config. */
function tieredConfig(options: LocalClusterOptions): string[] {
  const store = options.tiered !== undefined
    ? {
      backend: "s3",
      section: [
        "[tiered_storage.s3]",
        `bucket = "${options.tiered.bucket}"`,
        `endpoint = "${options.tiered.endpoint}"`,
      ],
    }
    : options.tieredFsPath !== undefined
    ? { backend: "fs", section: ["[tiered_storage.fs]", `path = "${options.tieredFsPath}"`] }
    : null;
  if (store === null) return ["[tiered_storage]", "enabled = false"];
  return [
    "[tiered_storage]",
    "enabled = true",
    `backend = "${store.backend}"`,
    ...(options.tieredSettings ?? []),
    "[tiered_storage.housekeeping]",
    ...(options.housekeepingSettings ?? []),
    ...store.section,
  ];
}

/** Runs `command` to its end; its exit code and output. */
export async function runCommand(
  command: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = await new Deno.Command(command, { args, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder();
  return { code: output.code, stdout: text.decode(output.stdout), stderr: text.decode(output.stderr) };
}

/** Whether Debian's etcd is installed. */
export async function etcdInstalled(): Promise<boolean> {
  return (await runCommand("sh", ["-c", "command -v etcd"])).code === 0;
}

/** Starts etcd and the nodes; on a failure, stops what it started and rethrows. */
export async function startLocalCluster(options: LocalClusterOptions): Promise<LocalCluster> {
  const script = new URL("../etcd-cluster.sh", import.meta.url).pathname;
  const etcdDir = `${options.dir}/etcd`;
  const started = await runCommand("bash", [script, "start", etcdDir, String(options.portBase)]);
  if (started.code !== 0) throw new Error(`Cannot start etcd: ${started.stderr.trim()}`);
  const endpoints = /endpoints=(\S+)/.exec(started.stdout)![1]!.split(",");
  const nodes: LocalNode[] = Array.from({ length: options.nodes }, (_, i) => {
    const id = (options.firstNodeId ?? 1) + i;
    return {
      id,
      kafka: `127.0.0.1:${options.portBase + 30 + id}`,
      http: `127.0.0.1:${options.portBase + 20 + id}`,
      process: null,
      paused: false,
    };
  });
  const configPath = (node: LocalNode) => `${options.dir}/node${node.id}.toml`;
  const cluster: LocalCluster = {
    endpoints,
    nodes,
    bootstrap: nodes.map((n) => n.kafka).join(","),
    node: (id) => nodes.find((n) => n.id === id)!,
    kill: async (node) => {
      const process = node.process;
      node.process = null;
      node.paused = false;
      await process?.stop("SIGKILL");
    },
    restart: async (node) => {
      if (node.process !== null) throw new Error(`Cannot restart node ${node.id}: it runs`);
      const credentials: Record<string, string> = options.tiered === undefined ? {} : {
        AWS_ACCESS_KEY_ID: options.tiered.accessKeyId,
        AWS_SECRET_ACCESS_KEY: options.tiered.secretAccessKey,
      };
      node.process = await startServerProcess(configPath(node), nodeListenTimeoutMs, {
        STRATA_KAFKA_ADDRESS: node.kafka,
        ...credentials,
      });
    },
    killEtcdMember: async (member) => {
      const killed = await runCommand("bash", [script, "kill1", String(member), etcdDir]);
      if (killed.code !== 0) throw new Error(`Cannot kill etcd member ${member}: ${killed.stderr.trim()}`);
    },
    restartEtcdMember: async (member) => {
      const started = await runCommand("bash", [
        script,
        "start1",
        String(member),
        etcdDir,
        String(options.portBase),
      ]);
      if (started.code !== 0) {
        throw new Error(`Cannot restart etcd member ${member}: ${started.stderr.trim()}`);
      }
    },
    pause: (node) => signal(node, "SIGSTOP"),
    resume: (node) => signal(node, "SIGCONT"),
    stop: async () => {
      for (const node of nodes) {
        if (node.paused) cluster.resume(node);
        await cluster.kill(node);
      }
      await runCommand("bash", [script, "stop", etcdDir]);
    },
  };
  try {
    for (const node of nodes) {
      await Deno.writeTextFile(configPath(node), nodeConfig(options, node, endpoints));
    }
    // With a bucket, one node at a time: s3rver's files race when boot probes write and delete
    // under one prefix at once.
    if (options.tiered === undefined) await Promise.all(nodes.map((n) => cluster.restart(n)));
    else for (const node of nodes) await cluster.restart(node);
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  return cluster;
}

function signal(node: LocalNode, name: "SIGSTOP" | "SIGCONT"): void {
  if (node.process === null) return;
  try {
    Deno.kill(node.process.pid, name);
  } catch {
    // The process is gone already (it died by itself): the heal finds it out of sync.
    return;
  }
  node.paused = name === "SIGSTOP";
}

/**
 * How scripts wait on a local cluster, beside a deadline: a check every 20 ms, a condition that
 * throws (a node still starting refuses) counting as not yet.
 */
export const clusterPolling = { pace: realTime(20), throwMeansNotYet: true };
