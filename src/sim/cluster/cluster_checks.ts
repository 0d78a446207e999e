import { decodeFloorRecord, type FloorRecord } from "../../cluster/floor_record.ts";
import type { Partition } from "../../log/partition/partition.ts";
import { clusterRoot, parseObjectKey } from "../../tier/bucket/object_keys.ts";
import { bucketPrefix } from "./cluster_settings.ts";
import * as inv from "./cluster_invariants.ts";
import type { ClusterWorld } from "./cluster_world.ts";

/** The committed floor of the workload's partition, read from the coordinator now; null before the first. */
export function committedFloor(w: ClusterWorld): FloorRecord | null {
  if (w.partition === null) return null;
  const key = w.keys.floor(w.partition.label);
  const kv = w.coordinator.range({ key }).kvs[0];
  return kv === undefined ? null : decodeFloorRecord(key, kv.value);
}

/** A `.log` object of the workload's partition in the bucket. */
export interface BucketSegment {
  key: string;
  /** "{revision}-{generation}". */
  incarnation: string;
  startOffset: number;
  endOffset: number;
  /** A merge's object, keyed by its start and end offsets. */
  merged: boolean;
}

/** The `.log` objects the bucket holds for the workload's partition, by start offset. */
export function bucketSegments(w: ClusterWorld): BucketSegment[] {
  const root = clusterRoot(bucketPrefix, w.clusterId);
  const segments: BucketSegment[] = [];
  for (const key of w.bucket.keys()) {
    const parsed = parseObjectKey(root, key);
    if (parsed.kind !== "segment" || parsed.file !== "log") continue;
    const object = w.bucket.peek(key)!;
    segments.push({
      key,
      incarnation: `${parsed.createdRevision}-${parsed.purgeGeneration}`,
      startOffset: parsed.startOffset,
      endOffset: Number(object.metadata["end-offset"]),
      merged: parsed.mergedEndOffset !== null,
    });
  }
  return segments.sort((a, b) => a.startOffset - b.startOffset);
}

/** "{revision}-{generation}" of a replica. */
export function incarnationOf(partition: Partition): string {
  const sb = partition.superblock;
  return `${sb.createdRevision}-${sb.purgeGeneration}`;
}

/** A leader's last stable offset against what was seen under its epoch, and its high watermark. */
function checkLastStableOffset(w: ClusterWorld, epoch: number, partition: Partition): void {
  const { lastStableOffset, highWatermark } = partition.log;
  const seen = w.promises.lastStableOffsetOf;
  w.fail(inv.lastStableOffsetMonotone(seen, epoch, lastStableOffset, highWatermark));
  seen.set(epoch, Math.max(seen.get(epoch) ?? 0, lastStableOffset));
}

/**
 * The checks after every step: the floor, each replica's eviction, and each leader's high watermark
 * and last stable offset.
 */
export function checkStep(w: ClusterWorld): void {
  recordStateChange(w);
  recordLeaderChange(w);
  // While the topic is deleted and made again there is no partition to check, and the old life's
  // promises stand until the deletion is done: its floor is not the new topic's.
  if (w.partition === null) return;
  const floor = committedFloor(w);
  const committed = floor?.upToOffset ?? 0;
  w.fail(inv.floorMonotone(w.promises.floorSeen, committed));
  w.promises.floorSeen = Math.max(w.promises.floorSeen, committed);
  for (const node of w.nodes) {
    const partition = node.partition(w);
    if (partition === null) continue;
    const nodeFloor = partition.superblock.tieredUpToOffset;
    w.fail(inv.evictedBelowFloor(node.id, partition.log.segments, nodeFloor, committed));
    const epoch = node.leaderEpoch(w);
    if (epoch !== null) {
      w.fail(inv.highWatermarkMonotone(w.promises.highWatermarkOf, epoch, partition.log.highWatermark));
      const before = w.promises.highWatermarkOf.get(epoch) ?? 0;
      w.promises.highWatermarkOf.set(epoch, Math.max(before, partition.log.highWatermark));
      checkLastStableOffset(w, epoch, partition);
    }
  }
  w.fail(inv.floorCommitted(committed, Math.max(0, ...w.promises.highWatermarkOf.values())));
  if (floor !== null && committed > 0) {
    const leader = w.leader()?.partition(w);
    const live = leader === null || leader === undefined ? null : incarnationOf(leader);
    const objects = bucketSegments(w).filter((o) => live === null || o.incarnation === live);
    w.fail(inv.floorBacked(committed, floor.deletedUpToOffset, objects));
    for (const node of w.nodes) {
      const partition = node.partition(w);
      if (partition === null || incarnationOf(partition) !== live) continue;
      w.fail(inv.remoteChainBacked(node.id, partition.log.segments, floor.deletedUpToOffset, objects));
    }
  }
}

/** Records each change of the partition's stored state (leader, epoch, in-sync set). */
function recordStateChange(w: ClusterWorld): void {
  if (w.partition === null) return;
  const kv = w.coordinator.range({ key: w.keys.partition(w.partition.address) }).kvs[0];
  const now = kv === undefined ? "none" : `${kv.value} at revision ${kv.modRevision}`;
  if (now === w.stateSeen) return;
  w.stateSeen = now;
  w.record(`state: ${now}`);
}

/** Records each change of the node that leads under the highest epoch. */
function recordLeaderChange(w: ClusterWorld): void {
  const leader = w.leader();
  const now = leader === null ? "none" : `node ${leader.id} epoch ${leader.leaderEpoch(w)}`;
  if (now === w.leaderSeen) return;
  if (leader !== null) w.counts.leaderChanges++;
  w.leaderSeen = now;
  w.record(`leader: ${now}`);
}

/** Sealed segments on every live replica and in the bucket hold the same bytes, by start offset. */
export function checkSealedIdentical(w: ClusterWorld): void {
  const stored: inv.StoredSegment[] = [];
  let live: string | null = null;
  for (const node of w.nodes) {
    const partition = node.partition(w);
    if (partition === null) continue;
    live = incarnationOf(partition);
    for (const s of partition.log.segments) {
      if (!s.sealed || s.location === "remote") continue;
      const bytes = node.raw.peek(s.logPath);
      if (bytes !== null) stored.push({ holder: `node ${node.id}`, startOffset: s.startOffset, bytes });
    }
  }
  const merges: inv.StoredSegment[] = [];
  const mergeEnds = new Map<inv.StoredSegment, number>();
  const plain: (inv.StoredSegment & { endOffset: number })[] = [];
  for (const o of bucketSegments(w)) {
    if (o.incarnation !== live) continue;
    const segment = { holder: "the bucket", startOffset: o.startOffset, bytes: w.bucket.peek(o.key)!.bytes };
    if (o.merged) {
      merges.push(segment);
      mergeEnds.set(segment, o.endOffset);
    } else {
      stored.push(segment);
      plain.push({ ...segment, endOffset: o.endOffset });
    }
  }
  w.fail(inv.sealedIdentical(stored));
  w.fail(inv.mergesIdentical(merges, plain, mergeEnds));
}
