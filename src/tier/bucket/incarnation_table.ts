import { isBug } from "../../runtime/assert.ts";
import { labelOf, type PartitionAddress, partitionDir } from "../../log/partition/partition.ts";
import { readSuperblock } from "../../log/partition/superblock.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import type { IncarnationTable, KnownPartition } from "./object_class.ts";

/**
 * Builds the incarnation table of the partitions named in `addresses` from a data directory:
 * `named` says which partitions the cluster's metadata has, each superblock says its revision,
 * generation and watermark; `referenced`, the incarnations restored topics read. Reading is all it does, so it is safe beside a running server;
 * callers read it after the listing it judges (see `classifyObject`).
 */
export async function readIncarnationTable(
  disk: Disk,
  dataPath: string,
  named: (address: PartitionAddress) => boolean,
  addresses: Iterable<PartitionAddress>,
  referenced: ReadonlySet<string> = new Set(),
): Promise<IncarnationTable> {
  const table: Map<string, KnownPartition> & { referenced?: ReadonlySet<string> } = new Map();
  table.referenced = referenced;
  for (const a of addresses) {
    const key = labelOf(a);
    if (table.has(key) || !named(a)) continue;
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
  } catch (error) {
    if (isBug(error)) throw error;
    // A superblock that cannot be read: nothing of the partition is judged garbage, and the
    // partition itself was refused, and logged, when the catalog opened it.
    return "unreadable";
  }
}
