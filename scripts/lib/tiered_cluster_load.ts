import { StrataClient } from "../../src/client/strata_client.ts";
import { describePartition } from "./kafka_metadata.ts";
import { runKcat } from "./campaign/campaign_clients.ts";
import { clusterPolling, type LocalCluster, type LocalNode } from "./local_cluster.ts";
import { waitFor } from "../../test/helpers/wait_for.ts";

/**
 * The load and the readers of the tiered-cluster run: records whose key names their offset and
 * whose value is derived from it, produced through the HTTP API to whichever node leads; kcat
 * reading a partition back whole, checksums verified; and the per-node facts the run checks.
 */

/** Bytes of each record's value. */
export const recordBytes = 64 * 1024;
/** Records one produce request carries: 1 MiB. */
export const recordsPerRequest = 16;
/** Attempts one request makes through leader changes before the run gives up. */
const produceAttemptsMax = 20;

/** The cluster wrote something other than what was produced: the run stops. */
export class LoadMismatchError extends Error {
  override name = "LoadMismatchError";
}

/** The value of the record at `offset`: a pattern seeded by the offset, the offset in its last 4 bytes. */
export function valueOf(offset: number): Uint8Array {
  const value = new Uint8Array(recordBytes);
  const view = new DataView(value.buffer);
  for (let i = 0; i + 4 <= value.length; i += 4096) view.setUint32(i, (offset * 2654435761 + i) >>> 0, true);
  view.setUint32(value.length - 4, offset, true);
  return value;
}

/** The key of the record at `offset`. */
export function keyOf(offset: number): string {
  return `r${offset}`;
}

/** The node that leads partition 0 of `topic` now, among the live ones. */
export async function leaderOf(
  cluster: LocalCluster,
  topic: string,
  deadlineMs = 20_000,
): Promise<LocalNode> {
  let leader: LocalNode | null = null;
  await waitFor(`a leader of ${topic}`, async () => {
    const live = cluster.nodes.filter((n) => n.process !== null);
    const p = await describePartition(live.map((n) => n.kafka).join(","), topic, 0);
    leader = p === null || p.leader <= 0 ? null : live.find((n) => n.id === p.leader) ?? null;
    return leader !== null;
  }, { deadlineMs, ...clusterPolling });
  return leader!;
}

/**
 * Produces the records [from, to) in requests of `recordsPerRequest`, each to the node leading
 * now. A request that fails (its leader died, or stepped down) is sent again to the next leader
 * from where that leader's log ends: a request that landed before the failure is not written twice.
 */
export async function produceRange(
  cluster: LocalCluster,
  topic: string,
  from: number,
  to: number,
): Promise<void> {
  let offset = from;
  let leader = await leaderOf(cluster, topic);
  while (offset < to) {
    const count = Math.min(recordsPerRequest, to - offset);
    for (let attempt = 1;; attempt++) {
      const batch = Array.from(
        { length: count },
        (_, i) => ({ key: keyOf(offset + i), payload: valueOf(offset + i) }),
      );
      const client = new StrataClient({ baseUrl: `http://${leader.http}`, encoding: "msgpack" });
      try {
        const written = await client.produce("kafka", topic, batch, 0);
        if (written.base_offset !== offset) {
          throw new LoadMismatchError(
            `Cannot go on: the batch for ${offset} was written at ${written.base_offset}`,
          );
        }
        break;
      } catch (error) {
        if (error instanceof LoadMismatchError || attempt === produceAttemptsMax) throw error;
        leader = await leaderOf(cluster, topic);
        const end = await logEndOf(leader, topic);
        if (end === offset + count) break;
        if (end !== offset) {
          throw new LoadMismatchError(`Cannot go on: the new leader's log ends at ${end}, not ${offset}`);
        }
      }
    }
    offset += count;
  }
}

/** The partition's log end on `node`. */
export async function logEndOf(node: LocalNode, topic: string): Promise<number> {
  const client = new StrataClient({ baseUrl: `http://${node.http}` });
  const stats = await client.partition("kafka", topic, 0) as unknown as { next_offset: number };
  return stats.next_offset;
}

/** The partition's directory on `node` (stream 1, topic `topicId`, partition 0). */
export function partitionDirOf(dir: string, node: LocalNode, topicId: number): string {
  return `${dir}/data${node.id}/streams/1/topics/${topicId}/partitions/0`;
}

/** Bytes of `.log` files in a partition's directory: what it holds locally. */
export async function localLogBytes(path: string): Promise<number> {
  let bytes = 0;
  for await (const entry of Deno.readDir(path)) {
    if (entry.name.endsWith(".log")) {
      bytes += (await Deno.stat(`${path}/${entry.name}`).catch(() => null))?.size ?? 0;
    }
  }
  return bytes;
}

/** A counter or gauge of `node`'s `/metrics` (no labels), NaN when absent. */
export async function metricOf(node: LocalNode, name: string): Promise<number> {
  const text = await fetch(`http://${node.http}/metrics`).then((r) => r.text());
  return Number(new RegExp(`^${name} ([0-9.e+]+)$`, "m").exec(text)?.[1] ?? NaN);
}

export interface ReadBack {
  records: number;
  /** Records whose offset, key or size is not the one produced there. */
  wrong: number;
  readMs: number;
}

/**
 * Reads partition 0 of `topic` from offset 0 to its end through kcat, which checks every batch's
 * CRC (`check.crcs`), and compares each record's offset, key and size with what was produced.
 */
export async function readBackWithKcat(
  bootstrap: string,
  topic: string,
  expected: number,
): Promise<ReadBack> {
  const args = ["-C", "-b", bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q"];
  args.push("-X", "check.crcs=true", "-f", "%o %k %S\\n");
  const startedMs = performance.now();
  const read = await runKcat(args, 300_000);
  const readMs = Math.round(performance.now() - startedMs);
  if (!read.ok) throw new Error(`Cannot read ${topic} back: ${read.stderr.trim()}`);
  const lines = read.stdout.split("\n").filter((l) => l !== "");
  let wrong = 0;
  for (const [i, line] of lines.entries()) {
    if (line !== `${i} ${keyOf(i)} ${recordBytes}`) wrong++;
  }
  return { records: lines.length, wrong: wrong + Math.abs(expected - lines.length), readMs };
}
