import type { PartitionAddress } from "../log/partition.ts";
import { segmentStem } from "../log/segment.ts";

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

/** `{prefix}/{cluster}/`: everything this cluster writes is under it. */
export function clusterRoot(prefix: string, clusterId: string): string {
  return `${prefix}/${clusterId}/`;
}

/** `{prefix}/{cluster}/{stream}/{topic}/{partition}/{revision}-{generation}/` */
export function incarnationPrefix(p: PartitionIncarnation): string {
  return `${clusterRoot(p.prefix, p.clusterId)}${incarnationPath(p)}`;
}

/** The two objects of a segment; the zero-padded stem makes a listing sort by offset. */
export function segmentKeys(p: PartitionIncarnation, startOffset: number): { log: string; index: string } {
  const base = `${incarnationPrefix(p)}${segmentStem(startOffset)}`;
  return { log: `${base}.log`, index: `${base}.index` };
}

/** `{prefix}/{cluster}/meta/{stream}/{topic}/{partition}/{revision}-{generation}/manifest.bin` */
export function manifestKey(p: PartitionIncarnation): string {
  return `${clusterRoot(p.prefix, p.clusterId)}meta/${incarnationPath(p)}manifest.bin`;
}

/**
 * A key placed after every key of an incarnation: listing from it skips the rest of that
 * incarnation ("~" sorts after the digits, "." and lower-case letters of segment and manifest names).
 */
export function afterIncarnation(incarnationPrefixKey: string): string {
  return `${incarnationPrefixKey}~`;
}

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
    file: "log" | "index";
  }
  | {
    kind: "manifest";
    address: PartitionAddress;
    createdRevision: string;
    purgeGeneration: number;
    incarnationPrefix: string;
  }
  | { kind: "unrecognized" };

const idPattern = /^(0|[1-9][0-9]{0,9})$/;
const incarnationPattern = /^([0-9a-f]{1,32})-(0|[1-9][0-9]{0,9})$/;
const segmentPattern = /^([0-9]{20})\.(log|index)$/;

/**
 * Parses a key written by this cluster. Anything that does not match the layout exactly is
 * `unrecognized`, which housekeeping and GC never delete: they only remove what they understand.
 */
export function parseObjectKey(root: string, key: string): ParsedObjectKey {
  if (!key.startsWith(root)) return { kind: "unrecognized" };
  const parts = key.slice(root.length).split("/");
  const meta = parts[0] === "meta";
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
  if (meta) return file === "manifest.bin" ? { kind: "manifest", ...common } : { kind: "unrecognized" };
  const seg = segmentPattern.exec(file);
  if (seg === null) return { kind: "unrecognized" };
  return { kind: "segment", ...common, startOffset: Number(seg[1]), file: seg[2] as "log" | "index" };
}

/** `{stream}/{topic}/{partition}/{revision}-{generation}/`: an incarnation below any root. */
export function incarnationPath(p: PartitionIncarnation): string {
  return `${p.streamId}/${p.topicId}/${p.partitionId}/${p.createdRevision}-${p.purgeGeneration}/`;
}
