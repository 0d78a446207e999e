import { assert } from "../../runtime/assert.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import { readUpTo, writeWholeFile } from "../../runtime/disk/file_ops.ts";
import type { Segment } from "./segment.ts";

/**
 * A segment's sparse index: one entry per `index_interval_bytes` bytes of log, each pointing at a batch
 * start. An entry is 16 bytes on disk, little-endian: relative_offset u32, position u32,
 * timestamp_us u64 (the batch's base timestamp). Timestamps are monotonic within a partition, so
 * both lookups are binary searches, and a lookup reads at most one interval of log after it.
 */
export const indexEntryBytes = 16;

export interface IndexEntry {
  relativeOffset: number;
  position: number;
  timestampUs: number;
}

export class SparseIndex {
  readonly #entries: IndexEntry[] = [];

  get length(): number {
    return this.#entries.length;
  }

  get last(): IndexEntry | null {
    return this.#entries.at(-1) ?? null;
  }

  entries(): readonly IndexEntry[] {
    return this.#entries;
  }

  add(entry: IndexEntry): void {
    const last = this.last;
    assert(
      last === null ||
        (entry.relativeOffset > last.relativeOffset && entry.position > last.position &&
          entry.timestampUs >= last.timestampUs),
      "index entries must increase",
    );
    this.#entries.push(entry);
  }

  /** Drops the entries at or past `relativeOffset` (the segment is cut there). */
  truncateFrom(relativeOffset: number): void {
    while (this.#entries.length > 0 && this.#entries.at(-1)!.relativeOffset >= relativeOffset) {
      this.#entries.pop();
    }
  }

  /** The last entry at or before `relativeOffset`, or the start of the segment. */
  floorByOffset(relativeOffset: number): IndexEntry {
    return this.#floor((e) => e.relativeOffset <= relativeOffset);
  }

  /** The last entry whose batch starts strictly before `timestampUs`, or the start of the segment. */
  floorByTimestamp(timestampUs: number): IndexEntry {
    return this.#floor((e) => e.timestampUs < timestampUs);
  }

  #floor(isAtOrBefore: (e: IndexEntry) => boolean): IndexEntry {
    let lo = 0;
    let hi = this.#entries.length - 1;
    let best: IndexEntry = { relativeOffset: 0, position: 0, timestampUs: 0 };
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const entry = this.#entries[mid]!;
      if (isAtOrBefore(entry)) {
        best = entry;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return best;
  }
}

export function encodeIndexEntry(entry: IndexEntry): Uint8Array {
  const bytes = new Uint8Array(indexEntryBytes);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, entry.relativeOffset, true);
  view.setUint32(4, entry.position, true);
  view.setBigUint64(8, BigInt(entry.timestampUs), true);
  return bytes;
}

/** A whole index file's bytes. */
export function encodeIndexEntries(entries: readonly IndexEntry[]): Uint8Array {
  const bytes = new Uint8Array(entries.length * indexEntryBytes);
  entries.forEach((e, i) => bytes.set(encodeIndexEntry(e), i * indexEntryBytes));
  return bytes;
}

/** Decodes a whole index file; returns null when it is not a whole number of entries. */
export function decodeIndexEntries(bytes: Uint8Array): IndexEntry[] | null {
  if (bytes.length % indexEntryBytes !== 0) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const entries: IndexEntry[] = [];
  for (let pos = 0; pos < bytes.length; pos += indexEntryBytes) {
    entries.push({
      relativeOffset: view.getUint32(pos, true),
      position: view.getUint32(pos + 4, true),
      timestampUs: Number(view.getBigUint64(pos + 8, true)),
    });
  }
  return entries;
}

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
