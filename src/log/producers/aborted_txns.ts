import { assert } from "../../runtime/assert.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import { readUpTo, writeWholeFile } from "../../runtime/disk/file_ops.ts";

/**
 * One aborted transaction as a segment's aborted-transaction index holds it (Kafka's `AbortedTxn`):
 * its producer, its first offset, its marker's offset (`lastOffset`), and the partition's last stable
 * offset once the abort completed, which lets a read stop looking further.
 */
export interface AbortedTxn {
  producerId: number;
  firstOffset: number;
  lastOffset: number;
  lastStableOffset: number;
}

/** An entry's bytes, as Kafka's `.txnindex`: int16 version 0, then four int64s. */
export const abortedTxnEntryBytes = 34;
const entryVersion = 0;

/** A `.txnindex` that is not whole entries of version 0 in order; its segment's index is rebuilt. */
export class AbortedTxnIndexError extends Error {
  override name = "AbortedTxnIndexError";
}

/**
 * The aborted transactions whose markers one segment holds (Kafka's `.txnindex`), in marker order:
 * what a read_committed fetch of that segment's offsets lists as aborted, so that the consumer drops
 * their records. The entries of a sealed segment never change.
 */
export class AbortedTxnIndex {
  readonly #entries: AbortedTxn[] = [];

  /** Entries, oldest first. */
  get entries(): readonly AbortedTxn[] {
    return this.#entries;
  }

  /** An abort whose marker the segment placed after every marker before it. */
  add(entry: AbortedTxn): void {
    const last = this.#entries.at(-1);
    assert(
      last === undefined || entry.lastOffset > last.lastOffset,
      `an aborted transaction's marker at ${entry.lastOffset} follows the one at ${last?.lastOffset}`,
    );
    assert(entry.firstOffset <= entry.lastOffset, "an aborted transaction begins before its marker");
    this.#entries.push(entry);
  }

  /** Forgets the aborts whose markers are at or past `offset` (the segment is cut there). */
  truncateFrom(offset: number): void {
    while ((this.#entries.at(-1)?.lastOffset ?? -1) >= offset) this.#entries.pop();
  }

  /**
   * Adds to `into` the aborts of this segment that overlap `[fromOffset, upperBoundOffset)`: their
   * markers at or past `fromOffset`, their first offsets below the bound. Returns true when the read
   * may stop at this segment: one of its aborts completed with the last stable offset at or past the
   * bound, so no later segment holds an abort that began below it.
   */
  collect(fromOffset: number, upperBoundOffset: number, into: AbortedTxn[]): boolean {
    // Bounded by the segment's entries.
    for (const entry of this.#entries) {
      if (entry.lastOffset >= fromOffset && entry.firstOffset < upperBoundOffset) into.push(entry);
      if (entry.lastStableOffset >= upperBoundOffset) return true;
    }
    return false;
  }

  /** The index as its file holds it. */
  encode(): Uint8Array {
    const bytes = new Uint8Array(this.#entries.length * abortedTxnEntryBytes);
    const view = new DataView(bytes.buffer);
    for (const [i, e] of this.#entries.entries()) {
      const at = i * abortedTxnEntryBytes;
      view.setInt16(at, entryVersion);
      view.setBigInt64(at + 2, BigInt(e.producerId));
      view.setBigInt64(at + 10, BigInt(e.firstOffset));
      view.setBigInt64(at + 18, BigInt(e.lastOffset));
      view.setBigInt64(at + 26, BigInt(e.lastStableOffset));
    }
    return bytes;
  }

  /** The index a file holds; throws AbortedTxnIndexError for bytes that are not one. */
  static decode(bytes: Uint8Array, source: string): AbortedTxnIndex {
    if (bytes.length % abortedTxnEntryBytes !== 0) {
      throw new AbortedTxnIndexError(`Cannot read ${source}: ${bytes.length} bytes are not whole entries`);
    }
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const index = new AbortedTxnIndex();
    for (let at = 0; at < bytes.length; at += abortedTxnEntryBytes) {
      if (view.getInt16(at) !== entryVersion) {
        throw new AbortedTxnIndexError(`Cannot read ${source}: an entry of version ${view.getInt16(at)}`);
      }
      const entry = {
        producerId: Number(view.getBigInt64(at + 2)),
        firstOffset: Number(view.getBigInt64(at + 10)),
        lastOffset: Number(view.getBigInt64(at + 18)),
        lastStableOffset: Number(view.getBigInt64(at + 26)),
      };
      const last = index.#entries.at(-1);
      if (
        entry.firstOffset > entry.lastOffset || (last !== undefined && entry.lastOffset <= last.lastOffset)
      ) {
        throw new AbortedTxnIndexError(`Cannot read ${source}: its entries are out of order at byte ${at}`);
      }
      index.#entries.push(entry);
    }
    return index;
  }
}

/** The index of a sealed segment as its `.txnindex` holds it; null when it has no file. */
export async function readAbortedTxnIndexFile(disk: Disk, path: string): Promise<AbortedTxnIndex | null> {
  const stat = await disk.stat(path);
  if (stat === null) return null;
  const file = await disk.open(path, { readOnly: true });
  try {
    return AbortedTxnIndex.decode(await readUpTo(file, 0, stat.sizeBytes), path);
  } finally {
    await file.close();
  }
}

/** Writes a segment's `.txnindex` durably, at its seal (reopenable, as `writeIndexFile`). */
export async function writeAbortedTxnIndexFile(
  disk: Disk,
  path: string,
  index: AbortedTxnIndex,
): Promise<void> {
  await writeWholeFile(disk, path, index.encode(), { reopenable: true });
}
