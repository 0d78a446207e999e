import { assert } from "../../runtime/assert.ts";
import { crc32c, crc32cOfRange } from "../../runtime/checksum/crc32c.ts";
import { yieldToReactor } from "../../runtime/cooperation/piece_gate.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import { readUpToInto, replaceFileWith, unlinkIfPresent } from "../../runtime/disk/file_ops.ts";
import { FormatVersionError, storageFormatVersion } from "../../runtime/format_version_error.ts";
import {
  emptyMarker,
  encodeRemoteMarker,
  markerFieldsAt,
  markerMagic,
  type RemoteMarker,
  remoteMarkerBytes,
  u64At,
} from "./remote_marker.ts";

/**
 * A partition's remote segment table, `remote.table` (docs/DESIGN.md, "The remote table"; its layout
 * is docs/FORMAT.md, "The remote table"): the markers of its tiered segments, one 128-byte record
 * each, appended as segments are evicted or planted, so that boot learns every remote segment from
 * one file read in pieces instead of one file per segment. Records apply in order:
 * - a marker record adds its segment, replacing the segments it covers (a merge replaces a range);
 * - a forget record drops the segments that start below its offset (retention deleted them).
 * A record that fails its checksum ends the table: it is the tail of an append a crash cut short,
 * whose segments still have their `.log` (a `.log` goes only after its record is synced), and is cut.
 * The file is rewritten with only the live records once it holds more than twice as many as live.
 */
export const remoteTableName = "remote.table";
export const remoteTableRecordBytes = remoteMarkerBytes;

/** Records written, or replayed, between two yields: 1 MiB of them. */
const recordsPerPiece = (1024 * 1024) / remoteTableRecordBytes;
/**
 * Bytes of the table one read takes. Deno runs a file read of 64 KiB or more on a thread of its
 * blocking pool, whose first use costs the process about 17 MB of resident memory: a boot that reads
 * less at once leaves that to the first fetch that needs it.
 */
const readPieceBytes = 32 * 1024;
/** A table is rewritten only past this many dead records, so that small tables are left alone. */
const deadRecordsBeforeRewriteMin = 1024;
const forgetMagic = new TextEncoder().encode("STRAFGET");

/** A table record that cannot be applied: the table contradicts itself. */
export class RemoteTableError extends Error {
  override name = "RemoteTableError";
  constructor(reason: string) {
    super(`Cannot read the remote table: ${reason}`);
  }
}

/** The forget record: magic `STRAFGET`, version u16 at 8, below_offset u64 at 16, CRC32C of 0..104 at 104. */
export function encodeForgetRecord(belowOffset: number): Uint8Array {
  assert(Number.isSafeInteger(belowOffset) && belowOffset >= 0, `Cannot forget below offset ${belowOffset}`);
  const bytes = new Uint8Array(remoteTableRecordBytes);
  const view = new DataView(bytes.buffer);
  bytes.set(forgetMagic, 0);
  view.setUint16(8, storageFormatVersion, true);
  view.setBigUint64(16, BigInt(belowOffset), true);
  view.setUint32(104, crc32c(bytes.subarray(0, 104)), true);
  return bytes;
}

/**
 * A table's records replayed, a piece at a time, from its bytes (sans I/O): the live markers are
 * kept as the numbers of their records, oldest segment first, and decoded only when asked for, so
 * that replaying a table allocates nothing per record. Records apply in order:
 * - a marker adds its segment, replacing the segments within its range (a merge); one that
 *   overlaps a segment in part contradicts the table (`RemoteTableError`);
 * - a forget drops the segments that start below its offset.
 * The first record that fails its magic or checksum ends the table: it and the bytes after it are
 * the torn tail. A whole record of another version throws `FormatVersionError`.
 */
export class RemoteTableReplay {
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  /** Record numbers of the live markers from `#head` on. */
  readonly #live: number[] = [];
  #head = 0;
  #next = 0;
  #torn = false;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** Whether every whole record is applied, or a torn one ended the table. */
  get done(): boolean {
    return this.#torn || (this.#next + 1) * remoteTableRecordBytes > this.#bytes.length;
  }

  /** Records applied: the whole records of the table once `done`. */
  get records(): number {
    return this.#next;
  }

  /** Bytes after the last whole record, once `done`. */
  get tornBytes(): number {
    return this.#bytes.length - this.#next * remoteTableRecordBytes;
  }

  /** Live markers. */
  get length(): number {
    return this.#live.length - this.#head;
  }

  startOffsetAt(i: number): number {
    return this.#u64(this.#live[this.#head + i]!, 16);
  }

  /**
   * The `i`th live marker, oldest first, decoded now into `into` when given (a walk of the table
   * reads every marker through one object), else into a new one.
   */
  markerAt(i: number, into: RemoteMarker = emptyMarker()): RemoteMarker {
    return markerFieldsAt(this.#view, this.#live[this.#head + i]! * remoteTableRecordBytes, into);
  }

  /** Every live marker, decoded. */
  markers(): RemoteMarker[] {
    return Array.from({ length: this.length }, (_, i) => this.markerAt(i));
  }

  /** Applies up to `count` more records. */
  step(count: number): void {
    for (let n = 0; n < count && !this.done; n++) {
      const kind = this.#kindOf(this.#next);
      if (kind === null) {
        this.#torn = true;
        return;
      }
      if (kind === "forget") this.#forget(this.#u64(this.#next, 16));
      else this.#add(this.#next);
      this.#next++;
    }
  }

  #add(record: number): void {
    const start = this.#u64(record, 16);
    const end = this.#u64(record, 24);
    const live = this.#live;
    if (this.length === 0 || this.#u64(live.at(-1)!, 24) < start) {
      live.push(record);
      return;
    }
    // The first live segment that ends at or after the new one's start, by bisection.
    let first = this.#head;
    let high = live.length;
    while (first < high) {
      const mid = (first + high) >>> 1;
      if (this.#u64(live[mid]!, 24) < start) first = mid + 1;
      else high = mid;
    }
    let past = first;
    while (past < live.length && this.#u64(live[past]!, 16) <= end) {
      if (this.#u64(live[past]!, 16) < start || this.#u64(live[past]!, 24) > end) {
        throw new RemoteTableError(`segment ${start}..${end} overlaps a segment in part`);
      }
      past++;
    }
    live.splice(first, past - first, record);
  }

  #forget(belowOffset: number): void {
    while (this.#head < this.#live.length && this.startOffsetAt(0) < belowOffset) this.#head++;
    if (this.#head === this.#live.length) {
      this.#live.length = 0;
      this.#head = 0;
    }
  }

  /** "marker", "forget", or null for a torn record; another version throws. */
  #kindOf(record: number): "marker" | "forget" | null {
    const at = record * remoteTableRecordBytes;
    const bytes = this.#bytes;
    const kind = startsWith(bytes, at, forgetMagic)
      ? "forget"
      : startsWith(bytes, at, markerMagic)
      ? "marker"
      : null;
    if (kind === null || this.#view.getUint32(at + 108, true) !== 0) return null;
    if (this.#view.getUint32(at + 104, true) !== crc32cOfRange(bytes, at, at + 104)) return null;
    const version = this.#view.getUint16(at + 8, true);
    if (version !== storageFormatVersion) {
      throw new FormatVersionError(`a remote table's ${kind} record`, version, storageFormatVersion);
    }
    return kind;
  }

  #u64(record: number, field: number): number {
    return u64At(this.#view, record * remoteTableRecordBytes + field);
  }
}

function startsWith(bytes: Uint8Array, at: number, magic: Uint8Array): boolean {
  for (let i = 0; i < magic.length; i++) if (bytes[at + i] !== magic[i]) return false;
  return true;
}

/**
 * Reads a partition's table, `readPieceBytes` a read, and replays it, 1 MiB of records between
 * yields; null when it has none (see `RemoteTableReplay`).
 */
export async function readRemoteTable(disk: Disk, dir: string): Promise<RemoteTableReplay | null> {
  const path = `${dir}/${remoteTableName}`;
  if (await disk.stat(path) === null) return null;
  const file = await disk.open(path, { readOnly: true });
  let bytes: Uint8Array;
  try {
    bytes = new Uint8Array(await file.sizeBytes());
    for (let at = 0; at < bytes.length; at += readPieceBytes) {
      const piece = bytes.subarray(at, Math.min(at + readPieceBytes, bytes.length));
      const read = await readUpToInto(file, piece, at);
      if (read < piece.length) {
        bytes = bytes.subarray(0, at + read);
        break;
      }
    }
  } finally {
    await file.close();
  }
  const replay = new RemoteTableReplay(bytes);
  while (!replay.done) {
    replay.step(recordsPerPiece);
    await yieldToReactor();
  }
  return replay;
}

/**
 * The writer of a partition's table, used inside its writer loop only. `records` counts the whole
 * records in the file, for the rewrite; appends go at the file's end whatever it counts.
 */
export class RemoteTable {
  readonly #disk: Disk;
  readonly #dir: string;
  #records: number;
  #live: number;

  /** `records` whole records in the file, of which `live` markers are live. */
  constructor(disk: Disk, dir: string, records: number, live: number) {
    assert(live <= records, `Cannot open a remote table of ${records} records with ${live} live`);
    this.#disk = disk;
    this.#dir = dir;
    this.#records = records;
    this.#live = live;
  }

  get path(): string {
    return `${this.#dir}/${remoteTableName}`;
  }

  /** Records in the file, live or not. */
  get records(): number {
    return this.#records;
  }

  /**
   * Cuts a torn tail (`tornBytes` after `records` whole records) before anything is appended after
   * it, and makes the cut durable.
   */
  async cutTornTail(tornBytes: number): Promise<void> {
    if (tornBytes === 0) return;
    const file = await this.#disk.open(this.path);
    try {
      await file.truncate(this.#records * remoteTableRecordBytes);
      await file.sync();
    } finally {
      await file.close();
    }
  }

  /**
   * Appends the markers, in order, and makes them durable before it returns. `replacing` of them
   * replace a live marker of the same segment (one evicted again after a restart found it uploaded).
   */
  async append(markers: readonly RemoteMarker[], replacing = 0): Promise<void> {
    assert(markers.length > 0, "Cannot append nothing to the remote table");
    const bytes = new Uint8Array(markers.length * remoteTableRecordBytes);
    for (const [i, m] of markers.entries()) bytes.set(encodeRemoteMarker(m), i * remoteTableRecordBytes);
    await this.#appendBytes(bytes);
    this.#records += markers.length;
    this.#live += markers.length - replacing;
  }

  /**
   * Forgets the `forgotten` live segments that start below `belowOffset`, durably; once the file
   * would hold more than twice as many records as live, it is rewritten with the `live` markers (those
   * left after the forget) instead.
   */
  async forget(belowOffset: number, forgotten: number, live: () => readonly RemoteMarker[]): Promise<void> {
    assert(
      forgotten > 0 && forgotten <= this.#live,
      `Cannot forget ${forgotten} of ${this.#live} live segments`,
    );
    const liveAfter = this.#live - forgotten;
    if (this.#records + 1 > 2 * liveAfter + deadRecordsBeforeRewriteMin) {
      const markers = live();
      assert(
        markers.length === liveAfter && markers.every((m) => m.startOffset >= belowOffset),
        "the live markers are those left after the forget",
      );
      await this.rewrite(markers);
      return;
    }
    await this.#appendBytes(encodeForgetRecord(belowOffset));
    this.#records++;
    this.#live = liveAfter;
  }

  /** Replaces the file by one of `markers` alone, atomically; none removes it. */
  async rewrite(markers: readonly RemoteMarker[]): Promise<void> {
    if (markers.length === 0) {
      await this.remove();
      return;
    }
    await replaceFileWith(this.#disk, this.path, async (file) => {
      for (let from = 0; from < markers.length; from += recordsPerPiece) {
        const piece = markers.slice(from, from + recordsPerPiece);
        const bytes = new Uint8Array(piece.length * remoteTableRecordBytes);
        for (const [i, m] of piece.entries()) bytes.set(encodeRemoteMarker(m), i * remoteTableRecordBytes);
        await file.writeAt(bytes, from * remoteTableRecordBytes);
        await yieldToReactor();
      }
    });
    this.#records = markers.length;
    this.#live = markers.length;
  }

  /** Removes the table (a purge), if there is one; durable only after the caller's directory fsync. */
  async remove(): Promise<void> {
    if (this.#records === 0 && await this.#disk.stat(this.path) === null) return;
    await unlinkIfPresent(this.#disk, this.path);
    this.#records = 0;
    this.#live = 0;
  }

  async #appendBytes(bytes: Uint8Array): Promise<void> {
    const created = this.#records === 0 && await this.#disk.stat(this.path) === null;
    const file = await this.#disk.open(this.path, { create: true });
    try {
      await file.append(bytes);
      await file.sync();
    } finally {
      await file.close();
    }
    if (created) await this.#disk.fsyncDir(this.#dir);
  }
}
