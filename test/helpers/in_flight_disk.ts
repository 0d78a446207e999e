import type { CreateOptions, Disk, DiskFile, DiskStat, OpenOptions } from "../../src/runtime/disk.ts";

/**
 * A Disk that counts its operations in flight, so a harness on virtual time can stop the clock
 * while real I/O runs. Without it, a slow or busy disk lets virtual time run ahead of the work
 * it times: deadlines expire and periodic passes fall due again while one read is still going.
 */
export class InFlightDisk implements Disk {
  readonly #inner: Disk;
  #inFlight = 0;

  constructor(inner: Disk) {
    this.#inner = inner;
  }

  /** Operations started and not yet settled, files' included. */
  get inFlight(): number {
    return this.#inFlight;
  }

  async #track<T>(operation: () => Promise<T>): Promise<T> {
    this.#inFlight++;
    try {
      return await operation();
    } finally {
      this.#inFlight--;
    }
  }

  async open(path: string, options?: OpenOptions): Promise<DiskFile> {
    return this.#file(await this.#track(() => this.#inner.open(path, options)));
  }

  async createExclusive(path: string, options?: CreateOptions): Promise<DiskFile> {
    return this.#file(await this.#track(() => this.#inner.createExclusive(path, options)));
  }

  list(dirPath: string): Promise<string[]> {
    return this.#track(() => this.#inner.list(dirPath));
  }

  stat(path: string): Promise<DiskStat | null> {
    return this.#track(() => this.#inner.stat(path));
  }

  mkdirp(dirPath: string): Promise<void> {
    return this.#track(() => this.#inner.mkdirp(dirPath));
  }

  rename(fromPath: string, toPath: string): Promise<void> {
    return this.#track(() => this.#inner.rename(fromPath, toPath));
  }

  link(existingPath: string, newPath: string): Promise<void> {
    return this.#track(() => this.#inner.link(existingPath, newPath));
  }

  unlink(path: string): Promise<void> {
    return this.#track(() => this.#inner.unlink(path));
  }

  removeTree(dirPath: string): Promise<void> {
    return this.#track(() => this.#inner.removeTree(dirPath));
  }

  fsyncDir(dirPath: string): Promise<void> {
    return this.#track(() => this.#inner.fsyncDir(dirPath));
  }

  capacityBytes(path: string): Promise<number> {
    return this.#track(() => this.#inner.capacityBytes(path));
  }

  #file(file: DiskFile): DiskFile {
    return {
      path: file.path,
      readAt: (buffer, position) => this.#track(() => file.readAt(buffer, position)),
      writeAt: (data, position) => this.#track(() => file.writeAt(data, position)),
      append: (data) => this.#track(() => file.append(data)),
      sizeBytes: () => this.#track(() => file.sizeBytes()),
      truncate: (lengthBytes) => this.#track(() => file.truncate(lengthBytes)),
      sync: () => this.#track(() => file.sync()),
      close: () => this.#track(() => file.close()),
    };
  }
}
