import { assert } from "../../runtime/assert.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import { readUpTo, writeWholeFile } from "../../runtime/disk/file_ops.ts";

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

/** Entries an index holds room for when it starts empty; it doubles as it fills. */
const initialCapacityEntries = 16;

const twoTo32 = 2 ** 32;

/**
 * The entries are held as the file holds them, 16 bytes each in one buffer, never an object per
 * entry: a segment's index costs its file's size in memory, and one read from its file (or its
 * object) is the whole of loading it. Entries come out as `IndexEntry` values only when asked for.
 */
export class SparseIndex {
  #bytes: Uint8Array;
  #view: DataView;
  #length: number;

  constructor(bytes: Uint8Array = new Uint8Array(initialCapacityEntries * indexEntryBytes), length = 0) {
    assert(length * indexEntryBytes <= bytes.length, "an index's entries fit in its buffer");
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.#length = length;
  }

  /**
   * The index a file's bytes hold, kept as they are (not copied); null when they are not a whole
   * number of entries. Whether its entries are to be trusted is `isConsistentWith`'s question.
   */
  static ofBytes(bytes: Uint8Array): SparseIndex | null {
    if (bytes.length % indexEntryBytes !== 0) return null;
    return new SparseIndex(bytes, bytes.length / indexEntryBytes);
  }

  get length(): number {
    return this.#length;
  }

  /** Bytes the entries take, in memory as in the file. */
  get sizeBytes(): number {
    return this.#length * indexEntryBytes;
  }

  get last(): IndexEntry | null {
    return this.#length === 0 ? null : this.entryAt(this.#length - 1);
  }

  entryAt(i: number): IndexEntry {
    assert(i >= 0 && i < this.#length, `index entry ${i} of ${this.#length}`);
    return {
      relativeOffset: this.#relativeOffsetAt(i),
      position: this.positionAt(i),
      timestampUs: this.#timestampAt(i),
    };
  }

  /** The batch position of entry `i`. */
  positionAt(i: number): number {
    return this.#view.getUint32(i * indexEntryBytes + 4, true);
  }

  /** The first entry's position at or after `position`, or null when every entry is before it. */
  ceilingPosition(position: number): number | null {
    let lo = 0;
    let hi = this.#length - 1;
    let best: number | null = null;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const at = this.positionAt(mid);
      if (at >= position) {
        best = at;
        hi = mid - 1;
      } else {
        lo = mid + 1;
      }
    }
    return best;
  }

  /** The entries, each an object: for tests and small indexes, never on a read's path. */
  entries(): IndexEntry[] {
    return Array.from({ length: this.#length }, (_, i) => this.entryAt(i));
  }

  /** The entries as the `.index` file holds them: a view of this index's own bytes. */
  bytes(): Uint8Array {
    return this.#bytes.subarray(0, this.sizeBytes);
  }

  add(entry: IndexEntry): void {
    const last = this.last;
    assert(
      last === null ||
        (entry.relativeOffset > last.relativeOffset && entry.position > last.position &&
          entry.timestampUs >= last.timestampUs),
      "index entries must increase",
    );
    if (this.sizeBytes + indexEntryBytes > this.#bytes.length) this.#grow();
    const at = this.sizeBytes;
    this.#view.setUint32(at, entry.relativeOffset, true);
    this.#view.setUint32(at + 4, entry.position, true);
    this.#view.setUint32(at + 8, entry.timestampUs % twoTo32, true);
    this.#view.setUint32(at + 12, Math.floor(entry.timestampUs / twoTo32), true);
    this.#length++;
  }

  /** Drops the entries at or past `relativeOffset` (the segment is cut there). */
  truncateFrom(relativeOffset: number): void {
    while (this.#length > 0 && this.#relativeOffsetAt(this.#length - 1) >= relativeOffset) this.#length--;
  }

  /** The last entry at or before `relativeOffset`, or the start of the segment. */
  floorByOffset(relativeOffset: number): IndexEntry {
    return this.#floor((i) => this.#relativeOffsetAt(i) <= relativeOffset);
  }

  /** The last entry whose batch starts strictly before `timestampUs`, or the start of the segment. */
  floorByTimestamp(timestampUs: number): IndexEntry {
    return this.#floor((i) => this.#timestampAt(i) < timestampUs);
  }

  /**
   * Whether these entries can be trusted for a `.log` of `logSizeBytes` bytes: the first points at
   * the start, offsets, positions and timestamps increase, and the last points inside the log.
   */
  isConsistentWith(logSizeBytes: number): boolean {
    if (this.#length === 0) return logSizeBytes === 0;
    if (this.positionAt(0) !== 0 || this.#relativeOffsetAt(0) !== 0) return false;
    for (let i = 1; i < this.#length; i++) {
      const increasing = this.positionAt(i) > this.positionAt(i - 1) &&
        this.#relativeOffsetAt(i) > this.#relativeOffsetAt(i - 1) &&
        this.#timestampAt(i) >= this.#timestampAt(i - 1);
      if (!increasing) return false;
    }
    return this.positionAt(this.#length - 1) < logSizeBytes;
  }

  /**
   * Whether a remote segment's index, fetched from the store, may serve its reads: positions that
   * increase and stay inside its `sizeBytes`. Anything else is not used: the read then scans from
   * the segment's start, slower but right.
   */
  fitsSegment(sizeBytes: number): boolean {
    for (let i = 0; i < this.#length; i++) {
      if (this.positionAt(i) >= sizeBytes || (i > 0 && this.positionAt(i) <= this.positionAt(i - 1))) {
        return false;
      }
    }
    return true;
  }

  #relativeOffsetAt(i: number): number {
    return this.#view.getUint32(i * indexEntryBytes, true);
  }

  #timestampAt(i: number): number {
    const at = i * indexEntryBytes + 8;
    return this.#view.getUint32(at + 4, true) * twoTo32 + this.#view.getUint32(at, true);
  }

  #grow(): void {
    const grown = new Uint8Array(Math.max(initialCapacityEntries * indexEntryBytes, this.#bytes.length * 2));
    grown.set(this.bytes());
    this.#bytes = grown;
    this.#view = new DataView(grown.buffer);
  }

  #floor(isAtOrBefore: (i: number) => boolean): IndexEntry {
    let lo = 0;
    let hi = this.#length - 1;
    let best = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (isAtOrBefore(mid)) {
        best = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return best < 0 ? { relativeOffset: 0, position: 0, timestampUs: 0 } : this.entryAt(best);
  }
}

/** The index in a `.index` file; null when the file does not exist or is not whole entries. */
export async function readIndexFile(disk: Disk, path: string): Promise<SparseIndex | null> {
  const stat = await disk.stat(path);
  if (stat === null) return null;
  const file = await disk.open(path, { readOnly: true });
  try {
    return SparseIndex.ofBytes(await readUpTo(file, 0, stat.sizeBytes));
  } finally {
    await file.close();
  }
}

/**
 * Replaces an index file with `index`'s entries, durably. Its handle is `reopenable`, so that a disk
 * that bounds its open files counts it: every partition may seal at once, and their index writes
 * then wait for handles rather than open one descriptor each.
 */
export async function writeIndexFile(disk: Disk, path: string, index: SparseIndex): Promise<void> {
  await writeWholeFile(disk, path, index.bytes(), { reopenable: true });
}
