import { labelOf, type PartitionAddress, partitionDir } from "../log/partition.ts";
import { readSuperblock } from "../log/superblock.ts";
import type { Disk } from "../runtime/disk.ts";
import type { Metadata } from "../server/metadata_store.ts";
import type { IncarnationTable, KnownPartition } from "./object_class.ts";

/**
 * Builds the incarnation table of the partitions named in `addresses` from a data directory: the
 * metadata says which partitions exist, each superblock says its revision, generation and
 * watermark. Reading is all it does, so it is safe beside a running server; callers read it after
 * the listing it judges (see `classifyObject`).
 */
export async function readIncarnationTable(
  disk: Disk,
  dataPath: string,
  metadata: Metadata,
  addresses: Iterable<PartitionAddress>,
): Promise<IncarnationTable> {
  const table = new Map<string, KnownPartition>();
  for (const a of addresses) {
    const key = labelOf(a);
    if (table.has(key)) continue;
    const topic = metadata.streams.find((s) => s.id === a.streamId)?.topics.find((t) => t.id === a.topicId);
    if (topic === undefined || a.partitionId >= topic.options.partitions) continue;
    table.set(key, await readKnown(disk, partitionDir(dataPath, a)));
  }
  return table;
}

async function readKnown(disk: Disk, dir: string): Promise<KnownPartition> {
  try {
    const sb = await readSuperblock(disk, dir);
    // Named by the metadata but without a readable superblock: created a moment ago or damaged.
    // Either way nothing of it may be judged garbage.
    if (sb === null) return "unreadable";
    return {
      createdRevision: sb.createdRevision,
      purgeGeneration: sb.purgeGeneration,
      deletedUpToOffset: sb.deletedUpToOffset,
    };
  } catch {
    return "unreadable";
  }
}
