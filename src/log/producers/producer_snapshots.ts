import { assert } from "../../runtime/assert.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import { unlinkIfPresent } from "../../runtime/disk/file_ops.ts";
import {
  CorruptRecordError,
  decodeRecord,
  readRecordFile,
  writeRecordFile,
} from "../../runtime/disk/record_file.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { ProducerEntry } from "./producer_entry.ts";
import type { ProducerStates } from "./producer_states.ts";

const magic = "STRAPROD";

/**
 * Snapshots a partition keeps: the newest, which boot starts from, and the one before it, in case
 * the newest is unreadable. Each holds at most `producersPerPartitionMax` entries.
 */
export const producerSnapshotsKept = 2;
/**
 * Snapshots a tiered partition holds beyond those for their segments' uploads at most: each goes
 * to the bucket with the segment that ends where it was taken, and a segment uploaded after its
 * snapshot was dropped goes without one.
 */
export const producerSnapshotsHeldMax = 4096;

/** `{offset:020}.producers`: the producers' state before `offset`, where a segment starts. */
export function producerSnapshotName(offset: number): string {
  return `${String(offset).padStart(20, "0")}.producers`;
}

/** Where a snapshot taken at `offset` is in a partition's directory `dir`. */
export function producerSnapshotPath(dir: string, offset: number): string {
  return `${dir}/${producerSnapshotName(offset)}`;
}

/** The offset a snapshot's name says it was taken at, or null for another name. */
function producerSnapshotOffset(name: string): number | null {
  const match = /^(\d{20})\.producers$/.exec(name);
  return match === null ? null : Number(match[1]);
}

/** A partition's idempotent producers as boot recovered them, and its snapshots on disk. */
export interface RecoveredProducers {
  states: ProducerStates;
  snapshots: ProducerSnapshots;
}

/** A snapshot as boot reads it: where it was taken, and the producers then. */
export interface ProducerSnapshot {
  offset: number;
  entries: ProducerEntry[];
}

/**
 * A partition's producer snapshots (Kafka's `.snapshot` files): at every roll the state of its
 * idempotent producers before the new segment's first offset is written as a record file, so that a
 * boot replays only the active segment's batches after it (`recoverSegments`). The newest
 * `producerSnapshotsKept` are kept, and in a tiered partition also those taken above its tiered
 * floor (`holdAbove`), which go to the bucket with their segments. A snapshot taken past where a
 * truncation cuts the log is deleted before the cut, and a purge deletes them all first, so that
 * none ever holds a batch the log does not.
 */
export class ProducerSnapshots {
  readonly #disk: Disk;
  readonly #dir: string;
  /** The offsets of the snapshots on disk, oldest first. */
  #offsets: number[];
  /** Snapshots taken above this offset wait for their segment's upload; none in an untiered partition. */
  #heldAboveOffset = Infinity;

  constructor(disk: Disk, dir: string, offsets: readonly number[] = []) {
    this.#disk = disk;
    this.#dir = dir;
    this.#offsets = [...offsets].sort((a, b) => a - b);
  }

  /**
   * Holds the snapshots taken above `offset` (a tiered partition's floor: every segment below it is
   * uploaded) for their segments' uploads; those at or below it go at the next write.
   */
  holdAbove(offset: number): void {
    this.#heldAboveOffset = offset;
  }

  /**
   * Writes the state before `offset` (durably), then deletes those neither among the newest
   * `producerSnapshotsKept` nor held, and the oldest held past `producerSnapshotsHeldMax`.
   */
  async write(offset: number, entries: readonly ProducerEntry[]): Promise<void> {
    assert(
      this.#offsets.length === 0 || offset >= this.#offsets.at(-1)!,
      `a producer snapshot at ${offset} follows the one at ${this.#offsets.at(-1)}`,
    );
    await writeProducerSnapshot(this.#disk, this.#dir, { offset, entries: [...entries] });
    if (this.#offsets.at(-1) !== offset) this.#offsets.push(offset);
    const newest = this.#offsets.length - producerSnapshotsKept;
    const beyondHeldMax = this.#offsets.length - producerSnapshotsHeldMax;
    const doomed = new Set(
      this.#offsets.filter((o, i) => i < newest && (o <= this.#heldAboveOffset || i < beyondHeldMax)),
    );
    // Bounded by the snapshots on disk, which this bounds in turn.
    for (const o of doomed) await unlinkIfPresent(this.#disk, producerSnapshotPath(this.#dir, o));
    this.#offsets = this.#offsets.filter((o) => !doomed.has(o));
  }

  /** Deletes the snapshots taken after `offset` (before a truncation there), durably. */
  async deleteAfter(offset: number): Promise<void> {
    const doomed = this.#offsets.filter((o) => o > offset);
    if (doomed.length === 0) return;
    for (const o of doomed) await unlinkIfPresent(this.#disk, producerSnapshotPath(this.#dir, o));
    await this.#disk.fsyncDir(this.#dir);
    this.#offsets = this.#offsets.filter((o) => o <= offset);
  }

  /**
   * The newest readable snapshot among `names` (a directory's listing); an unreadable one is
   * logged, deleted and passed over. Null when there is none.
   */
  static async newest(
    disk: Disk,
    dir: string,
    names: readonly string[],
    label: string,
    logger: Logger,
  ): Promise<{ snapshot: ProducerSnapshot | null; offsets: number[] }> {
    const offsets = names.map(producerSnapshotOffset).filter((o) => o !== null).sort((a, b) => a - b);
    // Newest first; each pass reads one snapshot or drops it, so the listing bounds the loop.
    for (let i = offsets.length - 1; i >= 0; i--) {
      const path = producerSnapshotPath(dir, offsets[i]!);
      try {
        const snapshot = await readRecordFile<ProducerSnapshot>(disk, path, magic);
        if (snapshot !== null && snapshot.offset === offsets[i]) return { snapshot, offsets };
        logger.warn("producer snapshot does not hold its offset; passed over", { partition: label, path });
      } catch (error) {
        if (!(error instanceof CorruptRecordError)) throw error;
        logger.warn("producer snapshot unreadable; passed over", { partition: label, path, error });
      }
      await unlinkIfPresent(disk, path);
      offsets.splice(i, 1);
    }
    return { snapshot: null, offsets };
  }
}

/**
 * Writes `snapshot` durably as the file `name` in `dir`, by default the one its offset names. A roll
 * writes one as it writes the sealed segment's `.index`: through the bound on open files.
 */
export function writeProducerSnapshot(
  disk: Disk,
  dir: string,
  snapshot: ProducerSnapshot,
  name = producerSnapshotName(snapshot.offset),
): Promise<void> {
  return writeRecordFile(disk, dir, name, magic, snapshot, { reopenable: true });
}

/**
 * A snapshot from the bytes of its file (an object of the bucket holds them whole); throws
 * `CorruptRecordError` for bytes that are not one, named by `source`.
 */
export function decodeProducerSnapshot(bytes: Uint8Array, source: string): ProducerSnapshot {
  const snapshot = decodeRecord<ProducerSnapshot>(bytes, magic, source);
  if (!Number.isSafeInteger(snapshot?.offset) || !Array.isArray(snapshot.entries)) {
    throw new CorruptRecordError(source, "not a producer snapshot");
  }
  return snapshot;
}
