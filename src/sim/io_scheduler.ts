import { assert } from "../runtime/assert.ts";
import type { Disk, DiskFile, DiskStat, OpenOptions } from "../runtime/disk.ts";
import type { Rng } from "../runtime/rng.ts";

/** Most promise hops one disk operation's completion is held back. */
export const completionHopsMax = 4;

/**
 * The seeded order in which pending disk I/O completes. Every operation on the wrapped disk takes
 * effect when called (as a real kernel would have it in its page cache), but its caller hears of it
 * only after a number of promise hops drawn from the seed: two operations in flight together can
 * complete in either order, and one seed always picks the same one. It also reports the bytes each
 * read or write moves, which the simulator sums per loop iteration (its measure of a synchronous
 * stretch).
 */
export class IoScheduler implements Disk {
  readonly #disk: Disk;
  readonly #rng: Rng;
  readonly #onBytes: (bytes: number) => void;

  constructor(disk: Disk, rng: Rng, onBytes: (bytes: number) => void = () => {}) {
    this.#disk = disk;
    this.#rng = rng;
    this.#onBytes = onBytes;
  }

  /** Delivers `result` after the seed's number of hops, keeping its value or its error. */
  later<T>(result: Promise<T>): Promise<T> {
    const hops = this.#rng.int(0, completionHopsMax);
    assert(hops >= 0 && hops <= completionHopsMax, "completion hops within their bound");
    let delayed: Promise<unknown> = result.then(() => undefined, () => undefined);
    for (let i = 0; i < hops; i++) delayed = delayed.then(() => undefined);
    return delayed.then(() => result);
  }

  bytes(count: number): void {
    this.#onBytes(count);
  }

  async open(path: string, options?: OpenOptions): Promise<DiskFile> {
    return new ScheduledFile(await this.later(this.#disk.open(path, options)), this);
  }

  async createExclusive(path: string): Promise<DiskFile> {
    return new ScheduledFile(await this.later(this.#disk.createExclusive(path)), this);
  }

  list(dirPath: string): Promise<string[]> {
    return this.later(this.#disk.list(dirPath));
  }

  stat(path: string): Promise<DiskStat | null> {
    return this.later(this.#disk.stat(path));
  }

  mkdirp(dirPath: string): Promise<void> {
    return this.later(this.#disk.mkdirp(dirPath));
  }

  rename(fromPath: string, toPath: string): Promise<void> {
    return this.later(this.#disk.rename(fromPath, toPath));
  }

  link(existingPath: string, newPath: string): Promise<void> {
    return this.later(this.#disk.link(existingPath, newPath));
  }

  unlink(path: string): Promise<void> {
    return this.later(this.#disk.unlink(path));
  }

  removeTree(dirPath: string): Promise<void> {
    return this.later(this.#disk.removeTree(dirPath));
  }

  fsyncDir(dirPath: string): Promise<void> {
    return this.later(this.#disk.fsyncDir(dirPath));
  }

  capacityBytes(path: string): Promise<number> {
    return this.later(this.#disk.capacityBytes(path));
  }
}

class ScheduledFile implements DiskFile {
  readonly path: string;
  readonly #file: DiskFile;
  readonly #scheduler: IoScheduler;

  constructor(file: DiskFile, scheduler: IoScheduler) {
    this.path = file.path;
    this.#file = file;
    this.#scheduler = scheduler;
  }

  readAt(buffer: Uint8Array, position: number): Promise<number> {
    this.#scheduler.bytes(buffer.length);
    return this.#scheduler.later(this.#file.readAt(buffer, position));
  }

  writeAt(data: Uint8Array, position: number): Promise<void> {
    this.#scheduler.bytes(data.length);
    return this.#scheduler.later(this.#file.writeAt(data, position));
  }

  append(data: Uint8Array): Promise<void> {
    this.#scheduler.bytes(data.length);
    return this.#scheduler.later(this.#file.append(data));
  }

  sizeBytes(): Promise<number> {
    return this.#scheduler.later(this.#file.sizeBytes());
  }

  truncate(lengthBytes: number): Promise<void> {
    return this.#scheduler.later(this.#file.truncate(lengthBytes));
  }

  sync(): Promise<void> {
    return this.#scheduler.later(this.#file.sync());
  }

  close(): Promise<void> {
    return this.#scheduler.later(this.#file.close());
  }
}
