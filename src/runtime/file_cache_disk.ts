import { AroundDisk } from "./around_disk.ts";
import { CachedFile } from "./cached_file.ts";
import type { CreateOptions, Disk, DiskFile, OpenOptions } from "./disk.ts";
import type { OpenFileCache } from "./open_file_cache.ts";

/**
 * A `Disk` whose `reopenable` files share the bounded handles of an `OpenFileCache`: such a file is
 * a `CachedFile`, closed by the cache while idle when another needs its slot and reopened on its
 * next operation. Every other file and operation is the inner disk's, unchanged. The cache bounds
 * the files held between uses; a file opened for one operation (a read, an upload, a superblock's
 * write) is closed by its user when done.
 */
export class FileCacheDisk extends AroundDisk {
  readonly #inner: Disk;
  readonly #cache: OpenFileCache;

  constructor(inner: Disk, cache: OpenFileCache) {
    super(inner, (operation) => operation());
    this.#inner = inner;
    this.#cache = cache;
  }

  override open(path: string, options: OpenOptions = {}): Promise<DiskFile> {
    if (!options.reopenable) return this.#inner.open(path, options);
    // A reopen never creates: a file gone from its path is an error, not a new empty file.
    const again: OpenOptions = {
      readOnly: options.readOnly ?? false,
      bypassCache: options.bypassCache ?? false,
    };
    return CachedFile.open(
      this.#cache,
      path,
      () => this.#inner.open(path, options),
      () => this.#inner.open(path, again),
    );
  }

  override createExclusive(path: string, options: CreateOptions = {}): Promise<DiskFile> {
    if (!options.reopenable) return this.#inner.createExclusive(path, options);
    const again: OpenOptions = { bypassCache: options.bypassCache ?? false };
    return CachedFile.open(
      this.#cache,
      path,
      () => this.#inner.createExclusive(path, options),
      () => this.#inner.open(path, again),
    );
  }
}
