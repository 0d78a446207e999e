import { segmentStem } from "../log/segment.ts";

/** The identity of a partition incarnation in the bucket (RFC § "Object layout"). */
export interface PartitionIncarnation {
  prefix: string;
  clusterId: string;
  streamId: number;
  topicId: number;
  partitionId: number;
  createdRevision: string;
  purgeGeneration: number;
}

/** `{prefix}/{cluster}/{stream}/{topic}/{partition}/{revision}-{generation}/` */
export function incarnationPrefix(p: PartitionIncarnation): string {
  return `${p.prefix}/${p.clusterId}/${p.streamId}/${p.topicId}/${p.partitionId}/${p.createdRevision}-${p.purgeGeneration}/`;
}

/** The two objects of a segment; the zero-padded stem makes a listing sort by offset. */
export function segmentKeys(p: PartitionIncarnation, startOffset: number): { log: string; index: string } {
  const base = `${incarnationPrefix(p)}${segmentStem(startOffset)}`;
  return { log: `${base}.log`, index: `${base}.index` };
}
