import type { Disk } from "../../runtime/disk/disk.ts";
import { readRecordFile, writeRecordFile } from "../../runtime/disk/record_file.ts";
import { FormatVersionError, storageFormatVersion } from "../../runtime/format_version_error.ts";

/**
 * A partition's small durable facts, rewritten atomically on every change: its incarnation, the
 * tiered floor and the deleted-up-to watermark (docs/DESIGN.md, "Terms").
 */
export interface Superblock {
  /** `storageFormatVersion`: 2. */
  version: number;
  /** Identifies this incarnation of the partition: random 64 bits as 16 hex digits. */
  createdRevision: string;
  /** Bumped by every purge; separates the offset spaces before and after it. */
  purgeGeneration: number;
  /**
   * The tiered floor, exclusive: every offset below it is durable in the object store. Written on
   * every apply of the control log's `AdvanceTieredFloor`; reset to 0 by a purge. A superblock
   * without the field reads as 0.
   */
  tieredUpToOffset: number;
  /**
   * Exclusive: total retention deleted every offset below it (local and remote). Raised after
   * each retention pass that deletes; housekeeping deletes the objects of the segments that start
   * below it, a `delete_grace` after it first sees the new value (docs/DESIGN.md, "The deletion
   * grace").
   */
  deletedUpToOffset: number;
  /**
   * Set by a restore from the bucket (docs/DESIGN.md, "Restore"): the segments below
   * `belowOffset` are objects of the incarnation the restore read, which keep their keys (another
   * cluster's, stream's or topic's, perhaps); null otherwise. A purge drops it with the segments.
   */
  restoredFrom: RestoredFrom | null;
}

/** The incarnation a restored partition's oldest segments are objects of, and where they end. */
export interface RestoredFrom {
  clusterId: string;
  streamId: number;
  topicId: number;
  partitionId: number;
  createdRevision: string;
  purgeGeneration: number;
  /** Exclusive: the segments that start below it are that incarnation's objects. */
  belowOffset: number;
  /** A read replica's source in another bucket of the same service; absent: the server's own. */
  bucket?: string;
}

export const superblockFileName = "superblock.bin";
const magic = "STRASUPB";

export function writeSuperblock(disk: Disk, dir: string, superblock: Superblock): Promise<void> {
  return writeRecordFile(disk, dir, superblockFileName, magic, superblock);
}

export async function readSuperblock(disk: Disk, dir: string): Promise<Superblock | null> {
  const stored = await readRecordFile<Partial<Superblock>>(disk, `${dir}/${superblockFileName}`, magic);
  if (stored === null) return null;
  if (stored.version !== storageFormatVersion) {
    throw new FormatVersionError(`the superblock of ${dir}`, stored.version, storageFormatVersion);
  }
  return {
    version: storageFormatVersion,
    createdRevision: stored.createdRevision ?? "",
    purgeGeneration: stored.purgeGeneration ?? 0,
    tieredUpToOffset: stored.tieredUpToOffset ?? 0,
    deletedUpToOffset: stored.deletedUpToOffset ?? 0,
    restoredFrom: stored.restoredFrom ?? null,
  };
}
