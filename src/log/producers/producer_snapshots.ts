import { assert } from "../../runtime/assert.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import { unlinkIfPresent } from "../../runtime/disk/file_ops.ts";
import { CorruptRecordError, readRecordFile, writeRecordFile } from "../../runtime/disk/record_file.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { ProducerEntry } from "./producer_entry.ts";
import type { ProducerStates } from "./producer_states.ts";

const magic = "STRAPROD";

/**
 * Snapshots a partition keeps: the newest, which boot starts from, and the one before it, in case
 * the newest is unreadable. Each holds at most `producersPerPartitionMax` entries.
 */
export const producerSnapshotsKept = 2;

/** `{offset:020}.producers`: the producers' state before `offset`, where a segment starts. */
export function producerSnapshotName(offset: number): string {
  return `${String(offset).padStart(20, "0")}.producers`;
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
 * `producerSnapshotsKept` are kept. A snapshot taken past where a truncation cuts the log is deleted
 * before the cut, and a purge deletes them all first, so that none ever holds a batch the log does not.
 */
export class ProducerSnapshots {
  readonly #disk: Disk;
  readonly #dir: string;
  /** The offsets of the snapshots on disk, oldest first. */
  #offsets: number[];

  constructor(disk: Disk, dir: string, offsets: readonly number[] = []) {
    this.#disk = disk;
    this.#dir = dir;
    this.#offsets = [...offsets].sort((a, b) => a - b);
  }

  /** Writes the state before `offset` (durably), then deletes all but the newest `producerSnapshotsKept`. */
  async write(offset: number, entries: readonly ProducerEntry[]): Promise<void> {
    assert(
      this.#offsets.length === 0 || offset >= this.#offsets.at(-1)!,
      `a producer snapshot at ${offset} follows the one at ${this.#offsets.at(-1)}`,
    );
    const snapshot: ProducerSnapshot = { offset, entries: [...entries] };
    // Written at a roll, as the sealed segment's `.index` is: through the bound on open files.
    await writeRecordFile(this.#disk, this.#dir, producerSnapshotName(offset), magic, snapshot, {
      reopenable: true,
    });
    if (this.#offsets.at(-1) !== offset) this.#offsets.push(offset);
    // Bounded by the kept count plus the one just written.
    while (this.#offsets.length > producerSnapshotsKept) {
      await unlinkIfPresent(this.#disk, `${this.#dir}/${producerSnapshotName(this.#offsets[0]!)}`);
      this.#offsets.shift();
    }
  }

  /** Deletes the snapshots taken after `offset` (before a truncation there), durably. */
  async deleteAfter(offset: number): Promise<void> {
    const doomed = this.#offsets.filter((o) => o > offset);
    if (doomed.length === 0) return;
    for (const o of doomed) await unlinkIfPresent(this.#disk, `${this.#dir}/${producerSnapshotName(o)}`);
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
      const path = `${dir}/${producerSnapshotName(offsets[i]!)}`;
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
