import type { CreateOptions, Disk, DiskFile, OpenOptions } from "../../../src/runtime/disk/disk.ts";
import { AroundDisk } from "../../../src/runtime/disk/around_disk.ts";

/**
 * A Disk that counts the files it has open now and the most it had at once, and the opens and syncs
 * of each path: what a bound on open files is checked against.
 */
export class OpenCountDisk extends AroundDisk {
  readonly #inner: Disk;
  /** Files open now (a path opened twice counts twice). */
  openNow = 0;
  openMax = 0;
  readonly opensByPath = new Map<string, number>();
  readonly syncsByPath = new Map<string, number>();
  /** Called before every file sync; a throw fails it. */
  beforeSync: (path: string) => void = () => {};
  /** While set, every read waits for it before reading: an operation that holds its file. */
  readsHeld: Promise<void> | null = null;

  constructor(inner: Disk) {
    super(inner, (operation) => operation());
    this.#inner = inner;
  }

  /** Forgets the most seen so far: from now on `openMax` starts at what is open. */
  resetMax(): void {
    this.openMax = this.openNow;
  }

  override async open(path: string, options?: OpenOptions): Promise<DiskFile> {
    return this.#counted(path, await this.#inner.open(path, options));
  }

  override async createExclusive(path: string, options?: CreateOptions): Promise<DiskFile> {
    return this.#counted(path, await this.#inner.createExclusive(path, options));
  }

  #counted(path: string, file: DiskFile): DiskFile {
    this.openNow++;
    this.openMax = Math.max(this.openMax, this.openNow);
    this.opensByPath.set(path, (this.opensByPath.get(path) ?? 0) + 1);
    let closed = false;
    return {
      path: file.path,
      readAt: async (buffer, position) => {
        await this.readsHeld;
        return await file.readAt(buffer, position);
      },
      writeAt: (data, position) => file.writeAt(data, position),
      append: (data) => file.append(data),
      sizeBytes: () => file.sizeBytes(),
      truncate: (lengthBytes) => file.truncate(lengthBytes),
      sync: async () => {
        this.beforeSync(path);
        this.syncsByPath.set(path, (this.syncsByPath.get(path) ?? 0) + 1);
        await file.sync();
      },
      close: async () => {
        if (!closed) this.openNow--;
        closed = true;
        await file.close();
      },
    };
  }
}
