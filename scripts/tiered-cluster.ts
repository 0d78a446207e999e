import { parseArgs } from "node:util";
import { StrataClient } from "../src/client/strata_client.ts";
import { checkTiering, type LocalS3rver, startLocalS3rver } from "./lib/campaign/campaign_tiering.ts";
import { bucketKeys } from "./lib/bucket_keys.ts";
import { brokersListed, describePartition } from "./lib/kafka_metadata.ts";
import {
  clusterPolling,
  etcdInstalled,
  type LocalBucket,
  type LocalCluster,
  type LocalNode,
  startLocalCluster,
} from "./lib/local_cluster.ts";
import { waitFor } from "../test/helpers/wait_for.ts";
import { type LocalRgw, rgwInstalled, startLocalRgw } from "./lib/local_rgw.ts";
import {
  leaderOf,
  localLogBytes,
  logEndOf,
  metricOf,
  partitionDirOf,
  produceRange,
  readBackWithKcat,
  recordBytes,
  recordsPerRequest,
} from "./lib/tiered_cluster_load.ts";

/**
 * Tiered storage across a 3-node cluster, end to end on real processes:
 *
 *   deno task tiered-cluster [--quick] [--mib 256] [--store s3rver|rgw] [--port-base 26000] [--json PATH]
 *
 * etcd (3 members), an S3 store (s3rver, or Ceph RGW) and three Strata nodes. A tiered topic with
 * replication factor 3 and 1 MiB segments takes `--mib` MiB (quick: 24) and half a segment more,
 * under a local envelope of
 * 16 MiB (quick: 4). Its leader is killed while it uploads and started again; the load goes on under
 * the new leader. The run then checks: the floor reached the last sealed segment; no replica
 * evicted above it; each replica's local `.log` bytes are within its envelope plus the active
 * segment; the bucket holds one `.log` object per sealed segment below the floor, no other; kcat
 * reads every record back from offset 0; a deleted topic's objects (a dead incarnation) are all
 * gone after the controller's orphan sweep. Last, a follower is wiped and started again: it takes
 * the tiered part by state transfer and copies only the rest from its leader; with the other two
 * nodes killed it leads, and kcat reads everything back from it, the evicted part cold through its
 * chunk cache. Exit code 0 when every check holds.
 */

const usage =
  "usage: deno task tiered-cluster [--quick] [--mib N] [--store s3rver|rgw] [--port-base N] [--json PATH]";
const mib = 1024 * 1024;
const segmentBytes = 1 * mib;
const topic = "tiered";

interface Options {
  totalMib: number;
  envelopeMib: number;
  store: "s3rver" | "rgw";
  portBase: number;
  json: string | null;
}

function options(): Options {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      quick: { type: "boolean" },
      mib: { type: "string" },
      store: { type: "string" },
      "port-base": { type: "string" },
      json: { type: "string" },
    },
  });
  const quick = values.quick === true;
  const totalMib = Number(values.mib ?? (quick ? 24 : 256));
  const portBase = Number(values["port-base"] ?? 26_000);
  const store = values.store ?? "s3rver";
  if (!Number.isInteger(totalMib) || totalMib < 8 || totalMib > 4096) {
    throw new Error(`--mib: 8 to 4096\n${usage}`);
  }
  if (!Number.isInteger(portBase) || portBase < 20_000 || portBase > 32_000) {
    throw new Error(`--port-base: an integer from 20000 to 32000\n${usage}`);
  }
  if (store !== "s3rver" && store !== "rgw") throw new Error(`--store: s3rver or rgw\n${usage}`);
  return { totalMib, envelopeMib: quick ? 4 : 16, store, portBase, json: values.json ?? null };
}

/** The store the nodes tier to. */
async function startStore(o: Options, dir: string): Promise<LocalS3rver | LocalRgw> {
  if (o.store === "s3rver") return await startLocalS3rver(`${dir}/s3rver`, "strata");
  if (!(await rgwInstalled())) {
    throw new Error("Cannot run on RGW: radosgw, ceph-mon and ceph-osd are not installed");
  }
  return await startLocalRgw(dir, "strata", o.portBase + 50);
}

/**
 * Creates the stream, the measured topic (id 1), the one that is deleted later (id 2) and one with a
 * total retention limit (id 3).
 */
async function createTopics(cluster: LocalCluster, o: Options): Promise<StrataClient> {
  await waitFor("every node registered", async () => (await brokersListed(cluster.nodes[0]!.kafka)) === 3, {
    deadlineMs: 30_000,
    ...clusterPolling,
  });
  const client = new StrataClient({ baseUrl: `http://${cluster.nodes[0]!.http}`, encoding: "msgpack" });
  await client.createStream("kafka");
  for (const name of [topic, "doomed", "retained"]) {
    await client.createTopic("kafka", {
      name,
      partitions: 1,
      tiered: true,
      replication_factor: 3,
      segment_size: segmentBytes,
      local_retention_size: o.envelopeMib * mib,
      // The third keeps 4 MiB in all: its leader's total retention deletes the rest on every replica.
      ...(name === "retained" ? { retention_max_bytes: 4 * mib } : {}),
    });
    await waitFor(`three replicas of ${name} in sync`, async () => {
      const p = await describePartition(cluster.bootstrap, name, 0);
      return p !== null && p.leader > 0 && p.isr.length === 3;
    }, { deadlineMs: 30_000, ...clusterPolling });
  }
  return client;
}

/** The leader's floor once it passed its last sealed segment; throws after `deadlineMs`. */
async function settledFloor(node: LocalNode, deadlineMs: number): Promise<number> {
  const client = new StrataClient({ baseUrl: `http://${node.http}` });
  let floor = 0;
  await waitFor("the floor to pass the last sealed segment", async () => {
    const stats = await client.partition("kafka", topic, 0) as {
      tiered_up_to_offset: number;
      segments: { end_offset: number; sealed: boolean }[];
    };
    floor = stats.tiered_up_to_offset;
    return floor === (stats.segments.filter((s) => s.sealed).at(-1)?.end_offset ?? -1) + 1;
  }, { deadlineMs: deadlineMs, ...clusterPolling });
  return floor;
}

/** Produces 4 MiB into "doomed", waits until it is tiered, and deletes the topic: a dead incarnation. */
async function makeDeadIncarnation(
  cluster: LocalCluster,
  client: StrataClient,
  bucket: LocalBucket,
): Promise<number> {
  await produceRange(cluster, "doomed", 0, 4 * recordsPerRequest);
  const leader = await leaderOf(cluster, "doomed");
  const tiered = await new StrataClient({ baseUrl: `http://${leader.http}` })
    .awaitTiered("kafka", "doomed", 0, 3 * recordsPerRequest, 60_000);
  if (!tiered) throw new Error("Cannot go on: the doomed topic was not tiered within 60 s");
  const objects = (await bucketKeys(bucket, deadTopicKeys)).length;
  await client.deleteTopic("kafka", "doomed");
  return objects;
}

/** Every key of topic 2 (segments and manifests), whatever its incarnation. */
const deadTopicKeys = /^strata\/[0-9a-f]+\/(meta\/)?1\/2\//;

/** Every live node's first offset of "retained", and its leader's committed deleted watermark. */
async function retainedStarts(cluster: LocalCluster) {
  const live = cluster.nodes.filter((n) => n.process !== null);
  const stats = await Promise.all(
    live.map((n) =>
      new StrataClient({ baseUrl: `http://${n.http}` }).partition("kafka", "retained", 0) as Promise<{
        first_offset: number;
        deleted_up_to_offset: number;
      }>
    ),
  );
  const leader = await leaderOf(cluster, "retained");
  const deletedUpTo = stats[live.indexOf(leader)]!.deleted_up_to_offset;
  return { firstOffsets: stats.map((s) => s.first_offset), deletedUpTo };
}

/** 12 MiB into "retained"; every replica deletes what its leader's retention deleted, at the same offset. */
async function checkRetentionFollowsLeader(cluster: LocalCluster) {
  await produceRange(cluster, "retained", 0, 12 * recordsPerRequest);
  let starts = await retainedStarts(cluster);
  const withinMs = await waitFor("every replica to delete what the leader deleted", async () => {
    starts = await retainedStarts(cluster);
    return starts.deletedUpTo > 0 && starts.firstOffsets.every((f) => f === starts.deletedUpTo);
  }, { deadlineMs: 60_000, ...clusterPolling }).catch(() => null);
  return { ...starts, withinMs: withinMs === null ? null : Math.round(withinMs) };
}

/** The load, with the leader killed while it uploads, and started again once another leads. */
async function loadThroughLeaderKill(cluster: LocalCluster, records: number) {
  const half = Math.floor(records / 2 / recordsPerRequest) * recordsPerRequest;
  const startedMs = performance.now();
  await produceRange(cluster, topic, 0, half);
  const first = await leaderOf(cluster, topic);
  await waitFor(
    "the leader to be uploading",
    async () => (await metricOf(first, "strata_tier_uploads_in_flight")) > 0,
    { deadlineMs: 30_000, ...clusterPolling },
  );
  const floorAtKill =
    (await new StrataClient({ baseUrl: `http://${first.http}` }).partition("kafka", topic, 0) as {
      tiered_up_to_offset: number;
    }).tiered_up_to_offset;
  await cluster.kill(first);
  const next = await leaderOf(cluster, topic);
  await cluster.restart(first);
  await produceRange(cluster, topic, half, records);
  const seconds = (performance.now() - startedMs) / 1000;
  return { killed: first.id, floorAtKill, newLeader: next.id, produceSeconds: Math.round(seconds * 10) / 10 };
}

/** Each node's local `.log` bytes once every one is within the envelope plus two segments, or the deadline. */
async function localBytesSettled(cluster: LocalCluster, dir: string, envelopeBytes: number) {
  const bytes = () => Promise.all(cluster.nodes.map((n) => localLogBytes(partitionDirOf(dir, n, 1))));
  const limit = envelopeBytes + 2 * segmentBytes;
  const withinMs = await waitFor(
    "every replica within its envelope",
    async () => (await bytes()).every((b) => b <= limit),
    { deadlineMs: 60_000, ...clusterPolling },
  )
    .catch(() => null);
  return { perNode: await bytes(), limitBytes: limit, withinEnvelope: withinMs !== null };
}

/** Wipes a follower, starts it again and measures what it took from the bucket and from its leader. */
async function rebuildFollower(cluster: LocalCluster, dir: string) {
  const leader = await leaderOf(cluster, topic);
  const wiped = cluster.nodes.find((n) => n.id !== leader.id)!;
  await cluster.kill(wiped);
  await Deno.remove(`${dir}/data${wiped.id}`, { recursive: true });
  const startedMs = performance.now();
  await cluster.restart(wiped);
  await waitFor("the wiped follower back in sync", async () => {
    const p = await describePartition(leader.kafka, topic, 0);
    return p !== null && p.isr.includes(wiped.id);
  }, { deadlineMs: 120_000, ...clusterPolling });
  const rejoinMs = Math.round(performance.now() - startedMs);
  const transferredBytes = await metricOf(wiped, "strata_tier_state_transfer_bytes_total");
  const copiedBytes = await metricOf(wiped, "strata_cluster_replica_fetched_bytes_total");
  // The counters are the node's: every topic it hosts counts, the one with a retention limit too.
  let logBytes = 0;
  for (const name of [topic, "retained"]) {
    const stats = await new StrataClient({ baseUrl: `http://${wiped.http}` }).partition("kafka", name, 0) as {
      segments: { size_bytes: number }[];
    };
    logBytes += stats.segments.reduce((n, s) => n + s.size_bytes, 0);
  }
  return { wiped, leader, rejoinMs, transferredBytes, copiedBytes, logBytes };
}

/** Kills every node but `alone`, waits until it leads, and reads everything back from it. */
async function readFromRebuilt(cluster: LocalCluster, alone: LocalNode, records: number) {
  // Only an in-sync (or eligible) replica is ever elected: a follower slowed past replica_lag_max on a
  // loaded machine is in sync again before the others go.
  await waitFor("the rebuilt node in the in-sync set", async () => {
    const p = await describePartition(alone.kafka, topic, 0);
    return p !== null && p.isr.includes(alone.id);
  }, { deadlineMs: 120_000, ...clusterPolling });
  for (const node of cluster.nodes) if (node.id !== alone.id) await cluster.kill(node);
  let view: Awaited<ReturnType<typeof describePartition>> = null;
  const ledMs = await waitFor("the rebuilt node to lead", async () => {
    view = await describePartition(alone.kafka, topic, 0);
    return view !== null && view.leader === alone.id;
  }, { deadlineMs: 60_000, ...clusterPolling }).catch((error) => {
    throw new Error(`${error.message}; its partition as it last described it: ${JSON.stringify(view)}`);
  });
  const end = await logEndOf(alone, topic);
  return { ledMs: Math.round(ledMs), logEnd: end, ...(await readBackWithKcat(alone.kafka, topic, records)) };
}

async function run(o: Options, dir: string, cluster: LocalCluster, bucket: LocalBucket) {
  // Half a segment more: the active segment holds data no replica may take from the bucket.
  const records = (o.totalMib * mib) / recordBytes + recordsPerRequest / 2;
  const client = await createTopics(cluster, o);
  const deadObjects = await makeDeadIncarnation(cluster, client, bucket);
  const retention = await checkRetentionFollowsLeader(cluster);
  const load = await loadThroughLeaderKill(cluster, records);
  const leader = await leaderOf(cluster, topic);
  const floor = await settledFloor(leader, 300_000);
  const tiering = await checkTiering(cluster, dir, topic, bucket);
  const local = await localBytesSettled(cluster, dir, o.envelopeMib * mib);
  const readBack = await readBackWithKcat(cluster.bootstrap, topic, records);
  const deadGoneMs = await waitFor(
    "the dead incarnation's objects to be swept",
    async () => (await bucketKeys(bucket, deadTopicKeys)).length === 0,
    { deadlineMs: 120_000, ...clusterPolling },
  ).catch(() => null);
  const rebuilt = await rebuildFollower(cluster, dir);
  // The leader's retention may have gone on meanwhile: the replicas are compared at one moment.
  let rebuiltRetained = await retainedStarts(cluster);
  const rebuiltAgrees = await waitFor("the rebuilt replica to start where the others do", async () => {
    rebuiltRetained = await retainedStarts(cluster);
    return rebuiltRetained.firstOffsets.every((f) => f === rebuiltRetained.deletedUpTo);
  }, { deadlineMs: 30_000, ...clusterPolling }).then(() => true, () => false);
  const cold = await readFromRebuilt(cluster, rebuilt.wiped, records);
  const localPartBytes = rebuilt.logBytes - rebuilt.transferredBytes;
  const checks = {
    floorCaughtUp: tiering.findings.floorCaughtUp,
    noMarkerAboveFloor: tiering.findings.markersAboveFloor.length === 0,
    oneObjectPerSegment: tiering.findings.missingObjects.length === 0 &&
      tiering.findings.extraObjects.length === 0,
    withinEnvelope: local.withinEnvelope,
    everyRecordReadBack: readBack.records === records && readBack.wrong === 0,
    deadIncarnationSwept: deadObjects > 0 && deadGoneMs !== null,
    retentionFollowsLeader: retention.withinMs !== null,
    rebuiltTakesNothingDeleted: rebuiltAgrees,
    transferNotCopy: rebuilt.transferredBytes > 0 && rebuilt.copiedBytes <= localPartBytes + segmentBytes,
    rebuiltServesAll: cold.records === records && cold.wrong === 0,
  };
  return {
    mib: o.totalMib,
    envelopeMib: o.envelopeMib,
    store: o.store,
    records,
    load,
    floor,
    tiering: tiering.findings,
    local,
    readBack,
    retention: { ...retention, afterRebuild: rebuiltRetained },
    deadIncarnation: {
      objects: deadObjects,
      sweptWithinMs: deadGoneMs === null ? null : Math.round(deadGoneMs),
    },
    rebuilt: { ...rebuilt, wiped: rebuilt.wiped.id, leader: rebuilt.leader.id, localPartBytes },
    cold,
    checks,
    valid: Object.values(checks).every((c) => c),
  };
}

async function main(): Promise<number> {
  const o = options();
  if (!(await etcdInstalled())) {
    throw new Error("Cannot run: etcd is not installed (apt-get install etcd-server)");
  }
  const dir = await Deno.makeTempDir({ prefix: "strata-tiered-cluster-" });
  const store = await startStore(o, dir);
  let cluster: LocalCluster | null = null;
  try {
    cluster = await startLocalCluster({
      portBase: o.portBase,
      dir,
      nodes: 3,
      leaseTtlMs: 3000,
      secret: "tiered-cluster-secret",
      tiered: store.bucket,
      tieredSettings: [`upload_bandwidth = "32 MiB"`],
      housekeepingSettings: [`interval = "2 s"`, `delete_grace = "2 s"`, `orphan_sweep_interval = "3 s"`],
    });
    const report = await run(o, dir, cluster, store.bucket);
    const text = JSON.stringify(report, null, 2);
    console.log(text);
    if (o.json !== null) await Deno.writeTextFile(o.json, text);
    return report.valid ? 0 : 1;
  } finally {
    await cluster?.stop();
    await store.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

Deno.exit(await main());
