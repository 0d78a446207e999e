import { assert } from "../../runtime/assert.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import { readRecordFile, writeRecordFile } from "../../runtime/disk/record_file.ts";

const magic = "STRAEPOC";
export const leaderEpochsFileName = "leader-epochs.bin";

/** The first offset written under a leader epoch. */
export interface EpochStart {
  epoch: number;
  startOffset: number;
}

/** Epochs kept at most; older ones are dropped (their data is long committed everywhere). */
export const epochStartsMax = 4096;

/**
 * A partition's leader epochs and where each began in its log (Kafka's leader epoch cache),
 * kept in `leader-epochs.bin` beside the segments. A leader answers from it where its log under
 * an epoch ends, which tells a follower where their logs diverge (KIP-101, KIP-279). It only
 * grows at the end, but for a truncation, which drops the epochs that started past it.
 */
export class LeaderEpochs {
  readonly #disk: Disk;
  readonly #dir: string;
  #starts: EpochStart[];
  #dirty = false;

  private constructor(disk: Disk, dir: string, starts: EpochStart[]) {
    this.#disk = disk;
    this.#dir = dir;
    this.#starts = starts;
  }

  /**
   * The stored epochs, without those past `logEndOffset` (written before a crash took their data).
   * A boot passes `listed`, whether the directory's listing holds the file: a partition never led
   * under an epoch (every one on a single node) then costs no open that fails.
   */
  static async load(disk: Disk, dir: string, logEndOffset: number, listed = true): Promise<LeaderEpochs> {
    const stored = listed
      ? await readRecordFile<EpochStart[]>(disk, `${dir}/${leaderEpochsFileName}`, magic)
      : null;
    const starts = (stored ?? []).filter((s) => s.startOffset < logEndOffset);
    const epochs = new LeaderEpochs(disk, dir, starts);
    epochs.#dirty = stored !== null && starts.length !== stored.length;
    return epochs;
  }

  /** An empty cache, for a new partition or a test. */
  static empty(disk: Disk, dir: string): LeaderEpochs {
    return new LeaderEpochs(disk, dir, []);
  }

  get latestEpoch(): number {
    return this.#starts.at(-1)?.epoch ?? -1;
  }

  starts(): readonly EpochStart[] {
    return this.#starts;
  }

  /** Notes that a batch of `epoch` starts at `offset`: a new epoch when it is above the latest. */
  assign(epoch: number, offset: number): void {
    if (epoch < 0 || epoch <= this.latestEpoch) return;
    const last = this.#starts.at(-1);
    assert(
      last === undefined || offset >= last.startOffset,
      `epoch ${epoch} starts at ${offset}, before ${last?.startOffset}`,
    );
    this.#starts.push({ epoch, startOffset: offset });
    if (this.#starts.length > epochStartsMax) this.#starts.shift();
    this.#dirty = true;
  }

  /** Drops the epochs that started at or past `offset` (the log is cut there). */
  truncateFrom(offset: number): void {
    const kept = this.#starts.filter((s) => s.startOffset < offset);
    if (kept.length === this.#starts.length) return;
    this.#starts = kept;
    this.#dirty = true;
  }

  /**
   * Where this log's records of `epoch` end, as Kafka's OffsetsForLeaderEpoch answers: the
   * largest epoch at or below it that this log has, and the start of the next epoch after that one
   * (the log's end when there is none). Below every epoch known: epoch -1 and the first epoch's
   * start. With no epochs at all: -1 and the log's end.
   */
  endOffsetFor(epoch: number, logEndOffset: number): { epoch: number; endOffset: number } {
    if (this.#starts.length === 0) return { epoch: -1, endOffset: logEndOffset };
    let at = -1;
    for (let i = 0; i < this.#starts.length && this.#starts[i]!.epoch <= epoch; i++) at = i;
    if (at < 0) return { epoch: -1, endOffset: this.#starts[0]!.startOffset };
    const next = this.#starts[at + 1];
    return {
      epoch: this.#starts[at]!.epoch,
      endOffset: next === undefined ? logEndOffset : next.startOffset,
    };
  }

  /** Writes the epochs durably when they changed since the last write. */
  async persist(): Promise<void> {
    if (!this.#dirty) return;
    this.#dirty = false;
    try {
      await writeRecordFile(this.#disk, this.#dir, leaderEpochsFileName, magic, this.#starts);
    } catch (error) {
      this.#dirty = true;
      throw error;
    }
  }
}
