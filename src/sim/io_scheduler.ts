import { readSmallFileByOpen } from "../runtime/disk/file_ops.ts";
import { assert } from "../runtime/assert.ts";
import {
  type CreateOptions,
  type Disk,
  DiskError,
  type DiskFile,
  type DiskStat,
  type OpenOptions,
} from "../runtime/disk/disk.ts";
import type { Rng } from "../runtime/rng.ts";

/** Most promise hops one disk operation's completion is held back. */
export const completionHopsMax = 4;

/**
 * The seeded order in which pending disk I/O completes. Every operation on the wrapped disk takes
 * effect when called (as a real kernel would have it in its page cache), but its caller hears of it
 * only after a number of promise hops drawn from the seed: two operations in flight together can
 * complete in either order, and one seed always picks the same one. It also reports the bytes each
 * read or write moves, which the simulator sums per loop iteration (its measure of a synchronous
 * stretch). One scheduler is one process's view of the disk: a crash revokes it, so code of the dead
 * process still awaiting something can never touch the disk again.
 */
export class IoScheduler implements Disk {
  readonly #disk: Disk;
  readonly #rng: Rng;
  readonly #onBytes: (bytes: number) => void;
  readonly #onOperation: (name: string, path: string) => void;
  #revoked = false;

  /**
   * `onOperation` hears of every operation before it runs, and may revoke this view (a crash that
   * strikes right then): the operation then fails as the dead process's would.
   */
  constructor(
    disk: Disk,
    rng: Rng,
    onBytes: (bytes: number) => void = () => {},
    onOperation: (name: string, path: string) => void = () => {},
  ) {
    this.#disk = disk;
    this.#rng = rng;
    this.#onBytes = onBytes;
    this.#onOperation = onOperation;
  }

  /** The process is gone: every later operation, on the disk or an open file, fails. */
  revoke(): void {
    this.#revoked = true;
  }

  /** Runs `operation` unless the process is gone, and delivers its result after the seed's hops. */
  run<T>(name: string, path: string, operation: () => Promise<T>): Promise<T> {
    if (!this.#revoked) this.#onOperation(name, path);
    if (this.#revoked) return Promise.reject(new DiskError("io", name, `${path} (the process crashed)`));
    try {
      return this.later(operation());
    } catch (error) {
      return Promise.reject(error);
    }
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
    return new ScheduledFile(await this.run("open", path, () => this.#disk.open(path, options)), this);
  }

  async createExclusive(path: string, options?: CreateOptions): Promise<DiskFile> {
    return new ScheduledFile(
      await this.run("create", path, () => this.#disk.createExclusive(path, options)),
      this,
    );
  }

  /** An open, a read and a close, each scheduled as the simulated process would see them. */
  readSmallFile(path: string, maxBytes: number): Promise<Uint8Array | null> {
    return readSmallFileByOpen(this, path, maxBytes);
  }

  list(dirPath: string): Promise<string[]> {
    return this.run("list", dirPath, () => this.#disk.list(dirPath));
  }

  stat(path: string): Promise<DiskStat | null> {
    return this.run("stat", path, () => this.#disk.stat(path));
  }

  mkdirp(dirPath: string): Promise<void> {
    return this.run("create directory", dirPath, () => this.#disk.mkdirp(dirPath));
  }

  rename(fromPath: string, toPath: string): Promise<void> {
    return this.run("rename", fromPath, () => this.#disk.rename(fromPath, toPath));
  }

  link(existingPath: string, newPath: string): Promise<void> {
    return this.run("link", existingPath, () => this.#disk.link(existingPath, newPath));
  }

  unlink(path: string): Promise<void> {
    return this.run("unlink", path, () => this.#disk.unlink(path));
  }

  removeTree(dirPath: string): Promise<void> {
    return this.run("remove", dirPath, () => this.#disk.removeTree(dirPath));
  }

  fsyncDir(dirPath: string): Promise<void> {
    return this.run("sync directory", dirPath, () => this.#disk.fsyncDir(dirPath));
  }

  capacityBytes(path: string): Promise<number> {
    return this.run("stat", path, () => this.#disk.capacityBytes(path));
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
    return this.#scheduler.run("read", this.path, () => this.#file.readAt(buffer, position));
  }

  writeAt(data: Uint8Array, position: number): Promise<void> {
    this.#scheduler.bytes(data.length);
    return this.#scheduler.run("write", this.path, () => this.#file.writeAt(data, position));
  }

  append(data: Uint8Array): Promise<void> {
    this.#scheduler.bytes(data.length);
    return this.#scheduler.run("write", this.path, () => this.#file.append(data));
  }

  sizeBytes(): Promise<number> {
    return this.#scheduler.run("stat", this.path, () => this.#file.sizeBytes());
  }

  truncate(lengthBytes: number): Promise<void> {
    return this.#scheduler.run("truncate", this.path, () => this.#file.truncate(lengthBytes));
  }

  sync(): Promise<void> {
    return this.#scheduler.run("sync", this.path, () => this.#file.sync());
  }

  close(): Promise<void> {
    // Closing is always allowed: the crash already closed the handle underneath.
    return this.#scheduler.later(this.#file.close());
  }
}
