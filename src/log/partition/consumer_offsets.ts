import type { Disk } from "../../runtime/disk/disk.ts";
import { readRecordFile, writeRecordFile } from "../../runtime/disk/record_file.ts";

const magic = "STRACOFF";
/** The file of a partition's stored consumer offsets, in its directory. */
export const consumerOffsetsFileName = "consumer_offsets.bin";
const fileName = consumerOffsetsFileName;

export class TooManyConsumersError extends Error {
  override name = "TooManyConsumersError";
  constructor(limit: number) {
    super(`Cannot store consumer offset: the partition already has ${limit} consumers`);
  }
}

/**
 * Stored consumer offsets of one partition, kept in one atomically rewritten file so that names
 * never become paths. Writes are serialized: each waits for the previous rewrite.
 */
export class ConsumerOffsets {
  readonly #disk: Disk;
  readonly #dir: string;
  readonly #consumersMax: number;
  #offsets: Map<string, number>;
  #writing: Promise<void> = Promise.resolve();

  private constructor(disk: Disk, dir: string, consumersMax: number, offsets: Map<string, number>) {
    this.#disk = disk;
    this.#dir = dir;
    this.#consumersMax = consumersMax;
    this.#offsets = offsets;
  }

  /**
   * Reads the stored offsets. `stored` false says the directory was just listed without the file
   * (a boot's recovery lists it), so there is nothing to read.
   */
  static async load(disk: Disk, dir: string, consumersMax: number, stored = true): Promise<ConsumerOffsets> {
    if (!stored) return new ConsumerOffsets(disk, dir, consumersMax, new Map());
    const record = await readRecordFile<Record<string, number>>(disk, `${dir}/${fileName}`, magic);
    return new ConsumerOffsets(disk, dir, consumersMax, new Map(Object.entries(record ?? {})));
  }

  get(name: string): number | null {
    return this.#offsets.get(name) ?? null;
  }

  /** The smallest stored offset, or null when no consumer has stored one (the consumer barrier). */
  minimum(): number | null {
    return this.#offsets.size === 0 ? null : Math.min(...this.#offsets.values());
  }

  get size(): number {
    return this.#offsets.size;
  }

  /** Stores an offset durably; resolves once it is on disk. */
  set(name: string, offset: number): Promise<void> {
    if (!this.#offsets.has(name) && this.#offsets.size >= this.#consumersMax) {
      return Promise.reject(new TooManyConsumersError(this.#consumersMax));
    }
    this.#offsets.set(name, offset);
    return this.#persist();
  }

  /** Forgets every offset (purge). */
  clear(): Promise<void> {
    this.#offsets = new Map();
    return this.#persist();
  }

  #persist(): Promise<void> {
    const snapshot = Object.fromEntries(this.#offsets);
    // The chain goes on after a failed write: that write's caller heard of its failure.
    this.#writing = this.#writing.catch(() => {}).then(() =>
      writeRecordFile(this.#disk, this.#dir, fileName, magic, snapshot)
    );
    return this.#writing;
  }
}
