import { rethrowBug } from "../../runtime/assert.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import type { Logger } from "../../runtime/logger.ts";
import { readRecordFile, writeRecordFile } from "../../runtime/disk/record_file.ts";

/** The LRU order as saved: chunk keys, coldest first. */
interface AccessTableRecord {
  version: 1;
  order: string[];
}

const accessTableFile = "access-table.bin";
const accessTableMagic = "STRACACH";

/** Whether a top-level name of the cache directory is the access table's (or its temporary file's). */
export function isAccessTableFile(name: string): boolean {
  return name.startsWith(accessTableFile);
}

/**
 * The access table: the cache's LRU order saved in its directory (a record file, written
 * atomically), so a restart keeps which chunks are warm. Saves run one after another.
 */
export class CacheAccessTable {
  readonly #disk: Disk;
  readonly #dir: string;
  #saving: Promise<void> = Promise.resolve();

  constructor(disk: Disk, dir: string) {
    this.#disk = disk;
    this.#dir = dir;
  }

  /** The saved order, coldest first; empty when there is none, or (logged) when it is unreadable. */
  async read(logger: Logger): Promise<string[]> {
    const saved = await readRecordFile<AccessTableRecord>(
      this.#disk,
      `${this.#dir}/${accessTableFile}`,
      accessTableMagic,
    )
      .catch((error) => {
        rethrowBug(error, logger, "reading the cache access table threw; the cache does not open");
        logger.warn("cache access table unreadable; chunks are ranked cold", { error });
        return null;
      });
    return saved?.order ?? [];
  }

  /** Saves `order` (coldest first) once the saves before it are done. */
  save(order: string[]): Promise<void> {
    // The chain goes on after a failed save: that save's caller heard of its failure.
    this.#saving = this.#saving.catch(() => {}).then(() =>
      writeRecordFile(
        this.#disk,
        this.#dir,
        accessTableFile,
        accessTableMagic,
        { version: 1, order } satisfies AccessTableRecord,
      )
    );
    return this.#saving;
  }
}
