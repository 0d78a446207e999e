import { parseArgs } from "node:util";
import { StrataApiError, StrataClient } from "../src/client/strata_client.ts";
import { checkTiering, startLocalS3rver } from "./lib/campaign/campaign_tiering.ts";
import { faultSchedule } from "./lib/campaign/fault_schedule.ts";
import {
  type CampaignTarget,
  readWholePartition,
  runHttpConsumer,
  runKcatConsumer,
  runProducer,
} from "./lib/campaign/campaign_clients.ts";
import { type FaultRecord, runNemesis } from "./lib/campaign/campaign_nemesis.ts";
import { brokersListed, describePartition } from "./lib/kafka_metadata.ts";
import {
  clusterPolling,
  etcdInstalled,
  type LocalBucket,
  type LocalCluster,
  startLocalCluster,
} from "./lib/local_cluster.ts";
import { waitFor } from "../test/helpers/wait_for.ts";
import { checkHistory, type ConsumerHistory, type SendRecord } from "./lib/log_history.ts";
import { Rng } from "../src/runtime/rng.ts";

/**
 * A fault campaign in the manner of Jepsen's Maelstrom "kafka" workload, on real processes: a
 * 3-member etcd and three Strata nodes on loopback, one partition of replication factor 3.
 *
 *   deno task faults [--seed N] [--duration-s 60] [--quick] [--tiered] [--port-base 28000] [--json PATH]
 *
 * Two kafkajs producers send unique values with acks=all, one at a time and never retried, and
 * record how each send ended (acknowledged at an offset, refused, or unknown). Two consumers poll
 * from where they left off, one through kcat, one through the TypeScript client over HTTP, and
 * record every record served. Meanwhile a seeded schedule (scripts/lib/campaign/fault_schedule.ts) kills,
 * pauses and restarts leaders and followers, and kills etcd members, until the duration is over.
 * Then every fault is healed, the partition is read whole, and the history is judged
 * (scripts/lib/log_history.ts): no acknowledged record lost or misplaced, none at two offsets, a
 * consumer's offsets only grow, nothing served that was later truncated; and the replicas' segment
 * files are the same bytes. With `--tiered` the topic is tiered to an s3rver (1 MiB segments and
 * local envelope, 2 KiB values), and at the end no replica may have evicted above the committed
 * floor and the bucket must hold one `.log` object per sealed segment below it. The seed is
 * printed first; `--seed` replays the same schedule.
 * Exit 0 when the history is valid, 1 when it is not, 2 when the campaign could not run.
 */

const usage =
  "usage: deno task faults [--seed N] [--duration-s S] [--quick] [--tiered] [--port-base N] [--json PATH]";
const topic = "campaign";
const leaseTtlMs = 2000;
/** Milliseconds the cluster has, once healed, to bring all three replicas back in sync. */
const healDeadlineMs = 90_000;
/** Bytes of padding on each value of a tiered campaign: 1 MiB segments fill in about 500 values. */
const tieredValuePaddingBytes = 2048;
/** Milliseconds of load after the heal, before the clients stop. */
const afterHealLoadMs = 2000;

interface Options {
  seed: number;
  durationMs: number;
  portBase: number;
  json: string | null;
  tiered: boolean;
}

function options(): Options {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      seed: { type: "string" },
      "duration-s": { type: "string" },
      quick: { type: "boolean", default: false },
      tiered: { type: "boolean", default: false },
      "port-base": { type: "string" },
      json: { type: "string" },
    },
  });
  const seed = values.seed === undefined ? Rng.fromEntropy().nextU32() : Number(values.seed);
  const durationS = Number(values["duration-s"] ?? (values.quick ? 20 : 60));
  const portBase = Number(values["port-base"] ?? 28_000);
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffff_ffff) {
    throw new Error(`--seed must be a 32-bit unsigned integer`);
  }
  if (!(durationS >= 5 && durationS <= 3600)) throw new Error(`--duration-s must be from 5 to 3600`);
  if (!Number.isInteger(portBase) || portBase < 20_000 || portBase > 32_000) {
    throw new Error(`--port-base must be an integer from 20000 to 32000`);
  }
  return { seed, durationMs: durationS * 1000, portBase, json: values.json ?? null, tiered: values.tiered! };
}

/** The campaign's topic, through the HTTP API: one partition on all three nodes, tiered or not. */
async function createTopic(cluster: LocalCluster, tiered: boolean): Promise<void> {
  // A node that listens may not be registered yet: the replication factor counts live nodes.
  await waitFor(
    "the first node to see all three",
    async () => (await brokersListed(cluster.nodes[0]!.kafka)) === 3,
    { deadlineMs: 20_000, ...clusterPolling },
  );
  const client = new StrataClient({ baseUrl: `http://${cluster.nodes[0]!.http}` });
  await client.createStream("kafka").catch((error) => {
    if (!(error instanceof StrataApiError && error.status === 409)) throw error;
  });
  await client.createTopic("kafka", {
    name: topic,
    partitions: 1,
    replication_factor: 3,
    ...(tiered ? { tiered: true, segment_size: "1 MiB", local_retention_size: "1 MiB" } : {}),
  });
  await waitFor(
    "three replicas in sync",
    async () => (await describePartition(cluster.bootstrap, topic))?.isr.length === 3,
    { deadlineMs: 30_000, ...clusterPolling },
  );
}

/** Restarts what is down, resumes what is paused, and waits for three replicas in sync. */
async function heal(cluster: LocalCluster): Promise<number> {
  for (const node of cluster.nodes) {
    if (node.paused) cluster.resume(node);
    if (node.process === null) await cluster.restart(node);
  }
  return await waitFor("three replicas in sync after the heal", async () => {
    const view = await describePartition(cluster.bootstrap, topic);
    return view !== null && view.isr.length === 3;
  }, { deadlineMs: healDeadlineMs, ...clusterPolling });
}

/** The partition's `.log` files on every node, compared: the names of those that differ. */
async function divergentSegments(dir: string, cluster: LocalCluster): Promise<string[]> {
  const files = await Promise.all(cluster.nodes.map(async (node) => {
    const path = `${dir}/data${node.id}/streams/1/topics/1/partitions/0`;
    const map = new Map<string, string>();
    for await (const entry of Deno.readDir(path)) {
      if (!entry.name.endsWith(".log")) continue;
      const digest = await crypto.subtle.digest("SHA-256", await Deno.readFile(`${path}/${entry.name}`));
      map.set(entry.name, btoa(String.fromCharCode(...new Uint8Array(digest))));
    }
    return map;
  }));
  const names = new Set(files.flatMap((f) => [...f.keys()]));
  return [...names].filter((name) => new Set(files.map((f) => f.get(name) ?? "missing")).size > 1).sort();
}

interface Workload {
  sends: SendRecord[][];
  consumers: ConsumerHistory[];
  stop(): Promise<void>;
}

function startWorkload(cluster: LocalCluster, tiered: boolean): Workload {
  let done = false;
  const target: CampaignTarget = {
    bootstrap: cluster.bootstrap,
    httpUrls: cluster.nodes.map((n) => `http://${n.http}`),
    topic,
    valuePaddingBytes: tiered ? tieredValuePaddingBytes : 0,
    done: () => done,
  };
  const sends: SendRecord[][] = [[], []];
  const consumers: ConsumerHistory[] = [{ consumer: "kcat", polls: [] }, { consumer: "http", polls: [] }];
  const loops = [
    runProducer("p0", target, sends[0]!),
    runProducer("p1", target, sends[1]!),
    runKcatConsumer(target, consumers[0]!),
    runHttpConsumer(target, consumers[1]!),
  ];
  return {
    sends,
    consumers,
    stop: async () => {
      done = true;
      await Promise.all(loops);
    },
  };
}

async function campaign(cluster: LocalCluster, dir: string, opts: Options, bucket: LocalBucket | null) {
  await createTopic(cluster, bucket !== null);
  const schedule = faultSchedule({ seed: opts.seed, durationMs: opts.durationMs, leaseTtlMs });
  const workload = startWorkload(cluster, bucket !== null);
  const startMs = performance.now();
  let faults: FaultRecord[];
  try {
    faults = await runNemesis(cluster, topic, schedule, startMs, (l) => console.error(l));
  } catch (error) {
    await workload.stop();
    throw error;
  }
  // Not back in sync within the deadline is a finding too: the history is judged all the same.
  const healMs = await heal(cluster).catch(() => null);
  await new Promise((resolve) => setTimeout(resolve, afterHealLoadMs));
  await workload.stop();
  const tiering = bucket === null ? null : await checkTiering(cluster, dir, topic, bucket).catch((error) => {
    console.error(`Cannot check what tiering left: ${error}`);
    return { findings: null, valid: false };
  });
  const final = await readWholePartition(cluster.bootstrap, topic);
  let divergent: string[] = [];
  await waitFor("the replicas' segments to be the same bytes", async () => {
    divergent = await divergentSegments(dir, cluster);
    return divergent.length === 0;
  }, { deadlineMs: 30_000, ...clusterPolling }).catch(() => {});
  const verdict = checkHistory({ sends: workload.sends.flat(), consumers: workload.consumers, final });
  const valid = verdict.valid && divergent.length === 0 && healMs !== null && (tiering?.valid ?? true);
  return {
    faults,
    /** Milliseconds from the heal to three replicas in sync; null: not within the deadline. */
    heal_ms: healMs === null ? null : Math.round(healMs),
    counts: verdict.counts,
    anomalies: verdict.anomalies,
    divergent_segments: divergent,
    tiering: tiering?.findings ?? null,
    valid,
  };
}

/** The options, or null (after saying why) when the campaign cannot run. */
async function startable(): Promise<Options | null> {
  try {
    const opts = options();
    if (await etcdInstalled()) return opts;
    console.error("deno task faults needs etcd: apt-get install etcd-server");
  } catch (error) {
    console.error(`${(error as Error).message}\n${usage}`);
  }
  return null;
}

async function main(): Promise<number> {
  const opts = await startable();
  if (opts === null) return 2;
  console.log(`seed ${opts.seed}`);
  const tieredFlag = opts.tiered ? " --tiered" : "";
  const replay = `deno task faults --seed ${opts.seed} --duration-s ${opts.durationMs / 1000}${tieredFlag}`;
  const dir = await Deno.makeTempDir({ prefix: "strata-faults-" });
  const s3 = opts.tiered ? await startLocalS3rver(`${dir}/s3`, "strata-faults") : null;
  const cluster = await startLocalCluster({
    portBase: opts.portBase,
    dir,
    nodes: 3,
    leaseTtlMs,
    secret: "fault-campaign-secret",
    ...(s3 !== null ? { tiered: s3.bucket } : {}),
  }).catch(async (error) => {
    await s3?.stop();
    throw error;
  });
  let valid = false;
  try {
    const result = await campaign(cluster, dir, opts, s3?.bucket ?? null);
    valid = result.valid;
    const report = {
      seed: opts.seed,
      duration_ms: opts.durationMs,
      lease_ttl_ms: leaseTtlMs,
      ...result,
      replay,
    };
    console.log(JSON.stringify(report, null, 2));
    if (opts.json !== null) await Deno.writeTextFile(opts.json, JSON.stringify(report, null, 2) + "\n");
    return valid ? 0 : 1;
  } finally {
    if (!valid) {
      for (const node of cluster.nodes) {
        await Deno.writeTextFile(`${dir}/node${node.id}.stderr`, node.process?.stderrTail() ?? "").catch(
          () => {},
        );
      }
    }
    await cluster.stop();
    await s3?.stop();
    if (valid) await Deno.remove(dir, { recursive: true }).catch(() => {});
    else console.error(`the cluster's data is kept in ${dir}; replay: ${replay}`);
  }
}

Deno.exit(
  await main().catch((error) => {
    console.error(`Cannot run the fault campaign: ${error instanceof Error ? error.stack : error}`);
    return 2;
  }),
);
