import { bucketRoute } from "../../objectstore/bucket_router.ts";
import type { PartitionAddress } from "../../log/partition/partition.ts";
import { objectStem } from "../../log/segment/segment.ts";
import type { RestoredFrom } from "../../log/partition/superblock.ts";

/** The identity of a partition incarnation in the bucket (docs/DESIGN.md, "The object key layout"). */
export interface PartitionIncarnation {
  prefix: string;
  clusterId: string;
  streamId: number;
  topicId: number;
  partitionId: number;
  createdRevision: string;
  purgeGeneration: number;
}

/**
 * The incarnation of a partition as it is now (or under `purgeGeneration`, for an upload started
 * before a purge): what every key of its objects is built from.
 */
export function incarnationOf(
  prefix: string,
  clusterId: string,
  partition: { address: PartitionAddress; superblock: { createdRevision: string; purgeGeneration: number } },
  purgeGeneration = partition.superblock.purgeGeneration,
): PartitionIncarnation {
  return {
    prefix,
    clusterId,
    ...partition.address,
    createdRevision: partition.superblock.createdRevision,
    purgeGeneration,
  };
}

/**
 * The incarnation whose keys a segment's objects have: a restored partition's segments below
 * `restoredFrom.belowOffset` keep the keys of the incarnation the restore read (docs/DESIGN.md,
 * "Restore"); every other segment is the partition's own.
 */
export function objectIncarnation(
  own: PartitionIncarnation,
  restoredFrom: RestoredFrom | null,
  startOffset: number,
): PartitionIncarnation {
  if (restoredFrom === null || startOffset >= restoredFrom.belowOffset) return own;
  const { belowOffset: _belowOffset, bucket, ...source } = restoredFrom;
  return { prefix: sourcePrefix(own.prefix, bucket ?? null), ...source };
}

/**
 * The prefix a source's keys are under: the server's own, in its bucket or, for a read replica of
 * another bucket, in that one (`bucketRoute`, read through `BucketRouter`).
 */
export function sourcePrefix(prefix: string, bucket: string | null): string {
  return bucket === null ? prefix : `${bucketRoute(bucket)}${prefix}`;
}

/** `{prefix}/{cluster}/`: everything this cluster writes is under it. */
export function clusterRoot(prefix: string, clusterId: string): string {
  return `${prefix}/${clusterId}/`;
}

/** `{prefix}/{cluster}/{stream}/{topic}/{partition}/{revision}-{generation}/` */
export function incarnationPrefix(p: PartitionIncarnation): string {
  return `${clusterRoot(p.prefix, p.clusterId)}${incarnationPath(p)}`;
}

/** The objects of a segment (`objectStem`): its batches, its index, its producer snapshot. */
export interface SegmentKeys {
  log: string;
  index: string;
  /** The producers' state at the segment's end (docs/FORMAT.md, "Producer snapshots"); may be absent. */
  producers: string;
  /** The aborted transactions whose markers it holds (docs/FORMAT.md, "Aborted-transaction indexes"); absent when none. */
  txnindex: string;
}

/** The objects of a segment (`objectStem`). */
export function segmentKeys(
  p: PartitionIncarnation,
  startOffset: number,
  mergedEndOffset: number | null,
): SegmentKeys {
  return segmentKeysOfStem(`${incarnationPrefix(p)}${objectStem(startOffset, mergedEndOffset)}`);
}

/** The objects of the segment whose `.log` object is `logKey`. */
export function segmentKeysOfLog(logKey: string): SegmentKeys {
  return segmentKeysOfStem(logKey.slice(0, logKey.length - ".log".length));
}

function segmentKeysOfStem(base: string): SegmentKeys {
  return {
    log: `${base}.log`,
    index: `${base}.index`,
    producers: `${base}.producers`,
    txnindex: `${base}.txnindex`,
  };
}

/** `{prefix}/{cluster}/meta/{stream}/{topic}/{partition}/{revision}-{generation}/manifest.bin` */
export function manifestKey(p: PartitionIncarnation): string {
  return `${clusterRoot(p.prefix, p.clusterId)}meta/${incarnationPath(p)}manifest.bin`;
}

/**
 * `{prefix}/{cluster}/meta/{stream}/{topic}/{partition}/{revision}-{generation}/dead`: the mark the
 * orphan sweep and the GC command put before deleting the first object of an incarnation they found
 * gone, and delete after its last. A restore refuses an incarnation that has one.
 */
export function deadMarkKey(p: PartitionIncarnation): string {
  return `${clusterRoot(p.prefix, p.clusterId)}meta/${incarnationPath(p)}dead`;
}

/** A dead mark's body: its key says everything; one byte, as some stores refuse an empty put. */
export const deadMarkBody: Uint8Array = new Uint8Array([0x44]);

/** `{prefix}/{cluster}/meta/{stream}/{topic}/topic.bin`: the topic manifest. */
export function topicManifestKey(
  prefix: string,
  clusterId: string,
  streamId: number,
  topicId: number,
): string {
  return `${clusterRoot(prefix, clusterId)}meta/${streamId}/${topicId}/topic.bin`;
}

/**
 * A key placed after every key of an incarnation: listing from it skips the rest of that
 * incarnation ("~" sorts after the digits, "." and lower-case letters of segment and manifest names).
 */
export function afterIncarnation(incarnationPrefixKey: string): string {
  return `${incarnationPrefixKey}~`;
}

/** Which of a segment's objects a key names. */
export type SegmentFile = "log" | "index" | "producers" | "txnindex";

/** What a key under the cluster root names. */
export type ParsedObjectKey =
  | {
    kind: "segment";
    address: PartitionAddress;
    createdRevision: string;
    purgeGeneration: number;
    /** The incarnation's own prefix, the key of its first object sorts at or after it. */
    incarnationPrefix: string;
    startOffset: number;
    /** A merged segment's end offset, from its key; null for a key of the start offset alone. */
    mergedEndOffset: number | null;
    file: SegmentFile;
  }
  | {
    /** A partition manifest, or a dead mark (`deadMarkKey`). */
    kind: "manifest" | "dead_mark";
    address: PartitionAddress;
    createdRevision: string;
    purgeGeneration: number;
    incarnationPrefix: string;
  }
  | {
    kind: "topic_manifest";
    /** The topic's partition 0: the manifest lives as long as the topic does. */
    address: PartitionAddress;
    /** The key itself: a topic manifest is a unit of its own (the orphan sweep skips past it). */
    incarnationPrefix: string;
  }
  | { kind: "unrecognized" };

const idPattern = /^(0|[1-9][0-9]{0,9})$/;
const incarnationPattern = /^([0-9a-f]{1,32})-(0|[1-9][0-9]{0,9})$/;
const segmentPattern = /^([0-9]{20})(?:-([0-9]{20}))?\.(log|index|producers|txnindex)$/;

/**
 * Parses a key written by this cluster. Anything that does not match the layout exactly is
 * `unrecognized`, which housekeeping and GC never delete: they only remove what they understand.
 */
export function parseObjectKey(root: string, key: string): ParsedObjectKey {
  if (!key.startsWith(root)) return { kind: "unrecognized" };
  const parts = key.slice(root.length).split("/");
  const meta = parts[0] === "meta";
  if (meta && parts.length === 4 && parts[3] === "topic.bin") {
    return parseTopicManifestKey(key, parts[1], parts[2]);
  }
  const [stream, topic, partition, incarnation, file, ...rest] = meta ? parts.slice(1) : parts;
  if (rest.length > 0 || file === undefined) return { kind: "unrecognized" };
  if (![stream, topic, partition].every((id) => idPattern.test(id ?? ""))) return { kind: "unrecognized" };
  const inc = incarnationPattern.exec(incarnation ?? "");
  if (inc === null) return { kind: "unrecognized" };
  const address = { streamId: Number(stream), topicId: Number(topic), partitionId: Number(partition) };
  const common = {
    address,
    createdRevision: inc[1]!,
    purgeGeneration: Number(inc[2]),
    incarnationPrefix: key.slice(0, key.length - file.length),
  };
  if (meta && file === "manifest.bin") return { kind: "manifest", ...common };
  if (meta && file === "dead") return { kind: "dead_mark", ...common };
  if (meta) return { kind: "unrecognized" };
  const seg = segmentPattern.exec(file);
  if (seg === null) return { kind: "unrecognized" };
  const startOffset = Number(seg[1]);
  const mergedEndOffset = seg[2] === undefined ? null : Number(seg[2]);
  if (mergedEndOffset !== null && !(mergedEndOffset > startOffset)) return { kind: "unrecognized" };
  return { kind: "segment", ...common, startOffset, mergedEndOffset, file: seg[3] as SegmentFile };
}

function parseTopicManifestKey(
  key: string,
  stream: string | undefined,
  topic: string | undefined,
): ParsedObjectKey {
  if (![stream, topic].every((id) => idPattern.test(id ?? ""))) return { kind: "unrecognized" };
  const address = { streamId: Number(stream), topicId: Number(topic), partitionId: 0 };
  return { kind: "topic_manifest", address, incarnationPrefix: key };
}

/** `{stream}/{topic}/{partition}@{revision}-{generation}`: names one incarnation, whichever of its keys it comes from. */
export function incarnationIdOf(
  key: Extract<ParsedObjectKey, { kind: "segment" | "manifest" | "dead_mark" | "topic_manifest" }>,
): string {
  const a = key.address;
  if (key.kind === "topic_manifest") return `${a.streamId}/${a.topicId}@topic`;
  return incarnationId(a, key.createdRevision, key.purgeGeneration);
}

/** `{stream}/{topic}/{partition}@{revision}-{generation}`: one incarnation's name. */
export function incarnationId(
  address: PartitionAddress,
  createdRevision: string,
  purgeGeneration: number,
): string {
  return `${address.streamId}/${address.topicId}/${address.partitionId}@${createdRevision}-${purgeGeneration}`;
}

/** The incarnation a parsed key of it belongs to, under the cluster root `root` (`{prefix}/{cluster}/`). */
export function incarnationOfKey(
  root: string,
  key: Extract<ParsedObjectKey, { kind: "segment" | "manifest" | "dead_mark" }>,
): PartitionIncarnation {
  const parts = root.split("/");
  return {
    prefix: parts.slice(0, -2).join("/"),
    clusterId: parts.at(-2)!,
    ...key.address,
    createdRevision: key.createdRevision,
    purgeGeneration: key.purgeGeneration,
  };
}

/** `{stream}/{topic}/{partition}/{revision}-{generation}/`: an incarnation below any root. */
export function incarnationPath(p: PartitionIncarnation): string {
  return `${p.streamId}/${p.topicId}/${p.partitionId}/${p.createdRevision}-${p.purgeGeneration}/`;
}
