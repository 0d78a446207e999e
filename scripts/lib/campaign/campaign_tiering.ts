import { type ChildProcess, spawn } from "node:child_process";
import { StrataClient } from "../../../src/client/strata_client.ts";
import { tableMarkersIn } from "../../../test/helpers/remote_table_file.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { bucketKeys, segmentLogKeysOf } from "../bucket_keys.ts";
import { ensureBucket } from "../ensure_bucket.ts";
import type { LocalBucket, LocalCluster } from "../local_cluster.ts";
import { MissedDeadlineError, realTime, waitFor } from "../../../test/helpers/wait_for.ts";

/**
 * The tiered part of a fault campaign: an s3rver for the nodes to tier to, and the checks of what
 * tiering left once every fault is healed: no replica evicted above the committed floor, and the
 * bucket holds one `.log` object per sealed segment below it, none missing, none extra.
 */

/** s3rver in its own Node process (scripts/s3rver.mjs), with a bucket. */
export interface LocalS3rver {
  bucket: LocalBucket;
  stop(): Promise<void>;
}

const credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };
/** Milliseconds s3rver may take to listen. */
const s3rverStartMs = 30_000;

export async function startLocalS3rver(dir: string, bucket: string): Promise<LocalS3rver> {
  const script = new URL("../../s3rver.mjs", import.meta.url).pathname;
  const child: ChildProcess = spawn("node", ["--openssl-legacy-provider", script, dir], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (chunk) => {
      out += chunk;
      const match = /port (\d+)/.exec(out);
      if (match !== null) resolve(Number(match[1]));
    });
    child.once("exit", (code) => reject(new Error(`Cannot start s3rver: it exited with ${code}`)));
    setTimeout(
      () => reject(new Error(`Cannot start s3rver: no port within ${s3rverStartMs} ms`)),
      s3rverStartMs,
    );
  }).catch((error) => {
    child.kill("SIGKILL");
    throw error;
  });
  const local: LocalBucket = { endpoint: `http://127.0.0.1:${port}`, bucket, ...credentials };
  await ensureBucket({ ...local, region: "us-east-1" }).catch((error) => {
    child.kill("SIGKILL");
    throw error;
  });
  return {
    bucket: local,
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

export interface TieringFindings {
  /** Whether the floor reached the last sealed segment within 60 s of the load's end. */
  floorCaughtUp: boolean;
  /** The leader's committed floor: every offset below it is in the bucket. */
  floor: number;
  segmentsBelowFloor: number;
  logObjects: number;
  /** Markers (node id and segment start) whose segment ends at or above the floor. */
  markersAboveFloor: string[];
  /** Sealed segments below the floor without their object, and objects that start no segment of the leader's. */
  missingObjects: number[];
  extraObjects: string[];
}

interface PartitionStats {
  tiered_up_to_offset: number;
  segments: { start_offset: number; end_offset: number; sealed: boolean }[];
}

/** Milliseconds the floor has, once the load stops, to reach the last sealed segment. */
const floorCatchUpMs = 60_000;

/** The leader's partition stats once its floor has passed its last sealed segment (or the deadline). */
async function settledStats(
  client: StrataClient,
  topic: string,
): Promise<{ stats: PartitionStats; caughtUp: boolean }> {
  let stats!: PartitionStats;
  const caughtUp = await waitFor("the floor to pass the last sealed segment", async () => {
    stats = await client.partition("kafka", topic, 0) as unknown as PartitionStats;
    const lastSealedEnd = stats.segments.filter((s) => s.sealed).at(-1)?.end_offset ?? -1;
    return stats.tiered_up_to_offset === lastSealedEnd + 1;
  }, { deadlineMs: floorCatchUpMs, pace: realTime(200) }).then(() => true, (error) => {
    // Not caught up within the deadline is a finding the check reports, not a failure of the check.
    if (error instanceof MissedDeadlineError) return false;
    throw error;
  });
  return { stats, caughtUp };
}

/**
 * Waits for the leader's floor to pass its last sealed segment, then reads its segments, every
 * node's markers and the bucket's objects, and compares them.
 */
export async function checkTiering(cluster: LocalCluster, dir: string, topic: string, bucket: LocalBucket) {
  await initCrc32c();
  const client = new StrataClient({ baseUrl: `http://${cluster.nodes[0]!.http}` });
  const { stats, caughtUp } = await settledStats(client, topic);
  const floor = stats.tiered_up_to_offset;
  const below = stats.segments.filter((s) => s.sealed && s.end_offset < floor).map((s) => s.start_offset);
  const markersAboveFloor: string[] = [];
  for (const node of cluster.nodes) {
    const path = `${dir}/data${node.id}/streams/1/topics/1/partitions/0`;
    for (const marker of tableMarkersIn(path)) {
      if (marker.endOffset >= floor) markersAboveFloor.push(`node ${node.id}: ${marker.startOffset}`);
    }
  }
  const objects = await bucketKeys(bucket, segmentLogKeysOf(1));
  const startOf = (key: string) => Number(key.slice(key.lastIndexOf("/") + 1, -".log".length));
  const objectStarts = new Set(objects.map(startOf));
  const segmentStarts = new Set(stats.segments.map((s) => s.start_offset));
  const findings: TieringFindings = {
    floorCaughtUp: caughtUp,
    floor,
    segmentsBelowFloor: below.length,
    logObjects: objects.length,
    markersAboveFloor,
    missingObjects: below.filter((start) => !objectStarts.has(start)),
    extraObjects: objects.filter((key) => !segmentStarts.has(startOf(key))),
  };
  const valid = caughtUp && markersAboveFloor.length === 0 && findings.missingObjects.length === 0 &&
    findings.extraObjects.length === 0;
  return { findings, valid };
}
