import { assert } from "../runtime/assert.ts";
import type { Disk } from "../runtime/disk.ts";
import { readUpTo } from "../runtime/read_up_to.ts";
import { writeWholeFile } from "../runtime/write_whole_file.ts";
import type { Segment } from "./segment.ts";
import { decodeIndexEntries, encodeIndexEntries, type IndexEntry } from "./sparse_index.ts";

/**
 * A sealed segment's `.index` file: read and checked at boot, written whole at the seal, and, for a
 * remote segment whose `.index` was missing, installed from the copy in the store.
 */

/** The entries of an index file; null when the file does not exist or is not whole entries. */
export async function readIndexFile(disk: Disk, path: string): Promise<IndexEntry[] | null> {
  const stat = await disk.stat(path);
  if (stat === null) return null;
  const file = await disk.open(path, { readOnly: true });
  try {
    return decodeIndexEntries(await readUpTo(file, 0, stat.sizeBytes));
  } finally {
    await file.close();
  }
}

/**
 * Replaces an index file with `entries`, durably. Its handle is `reopenable`, so that a disk that
 * bounds its open files counts it: every partition may seal at once, and their index writes then
 * wait for handles rather than open one descriptor each.
 */
export async function writeIndexFile(
  disk: Disk,
  path: string,
  entries: readonly IndexEntry[],
): Promise<void> {
  await writeWholeFile(disk, path, encodeIndexEntries(entries), { reopenable: true });
}

/**
 * Whether stored entries can be trusted for a `.log` of `logSizeBytes` bytes: the first points at the
 * start, offsets, positions and timestamps increase, and the last points inside the log.
 */
export function isConsistentIndex(entries: IndexEntry[], logSizeBytes: number): boolean {
  if (entries.length === 0) return logSizeBytes === 0;
  if (entries[0]!.position !== 0 || entries[0]!.relativeOffset !== 0) return false;
  for (let i = 1; i < entries.length; i++) {
    const a = entries[i - 1]!;
    const b = entries[i]!;
    if (b.position <= a.position || b.relativeOffset <= a.relativeOffset || b.timestampUs < a.timestampUs) {
      return false;
    }
  }
  return entries.at(-1)!.position < logSizeBytes;
}

/**
 * Stores a remote segment's `.index`, fetched because it was missing locally, and loads its
 * entries. Entries that are not increasing positions inside the segment are refused: the read
 * then scans from the segment's start, which is slower but right.
 */
export async function installRemoteIndex(disk: Disk, segment: Segment, bytes: Uint8Array): Promise<boolean> {
  assert(segment.location === "remote", "only a remote segment's index is fetched");
  const entries = decodeIndexEntries(bytes);
  const consistent = entries !== null &&
    entries.every((e, i) =>
      e.position < segment.sizeBytes && (i === 0 || e.position > entries[i - 1]!.position)
    );
  if (!consistent || segment.index.entries().length > 0) return false;
  await writeWholeFile(disk, segment.indexPath, bytes);
  for (const e of entries) segment.index.add(e);
  segment.lastIndexedPosition = entries.at(-1)?.position ?? -1;
  return true;
}
