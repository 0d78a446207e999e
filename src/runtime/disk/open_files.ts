import { assert } from "../assert.ts";
import { type Permit, Semaphore } from "../cooperation/semaphore.ts";
import type { CreateOptions, Disk, DiskFile, OpenOptions } from "./disk.ts";
import { AroundDisk } from "./around_disk.ts";
import { Counter, Gauge, type Registry } from "prom-client";

/**
 * Keys in the order of their last use, least recent first: the pure choice behind a bounded cache's
 * eviction (`OpenFileCache` keeps its idle files here). A `Set` keeps insertion order, so a use
 * deletes and re-inserts its key.
 */
export class LruKeys<K> {
  readonly #keys = new Set<K>();

  get size(): number {
    return this.#keys.size;
  }

  has(key: K): boolean {
    return this.#keys.has(key);
  }

  /** Makes `key` the most recently used, adding it when absent. */
  touch(key: K): void {
    this.#keys.delete(key);
    this.#keys.add(key);
  }

  /** Removes `key`; false when it was not there. */
  delete(key: K): boolean {
    return this.#keys.delete(key);
  }

  /** The least recently used key, or undefined when there is none. */
  oldest(): K | undefined {
    for (const key of this.#keys) return key;
    return undefined;
  }
}

/** The largest `max_open_files` configuration accepts. */
export const maxOpenFilesMax = 1024 * 1024;

/**
 * Bound on operations waiting for a handle while every one is in use; one more fails with
 * `QueueFullError`. Each waiter is one disk operation of a held file (a partition's write, fsync or
 * index write), so this covers 65,536 partitions writing at once.
 */
export const openFileWaitersMax = 64 * 1024;

/** A file whose handle the cache may close while nothing uses it (`CachedFile`). */
export interface EvictableFile {
  readonly path: string;
  /** Closes the handle, syncing first what was written since the last sync; the slot is freed once closed. */
  evict(): void;
}

/**
 * The process's bound on the handles of files held open between uses: `maxOpenFiles` slots (the
 * `[system] max_open_files` setting), one per open handle of a `CachedFile`, whether in use or idle.
 * A file that needs a handle takes a free slot; when none is free the least recently used idle file
 * is closed for it (`LruKeys`), and when every handle is in use the file waits, first come first
 * served, for one to fall idle (at most `openFileWaitersMax` waiters). A handle in use is never
 * closed, and an operation holds its handle only while it runs and asks for no other, so every wait
 * ends when some operation does.
 */
export class OpenFileCache {
  readonly maxOpenFiles: number;
  readonly #slots: Semaphore;
  /** Files with a handle and no operation on it, least recently used first. */
  readonly #idle = new LruKeys<EvictableFile>();
  /** Idle handles closing for a waiter: their slots are promised to the queue. */
  #closesForWaiters = 0;
  #evictionsTotal = 0;

  constructor(options: { maxOpenFiles: number; waitersMax?: number }) {
    assert(
      Number.isSafeInteger(options.maxOpenFiles) && options.maxOpenFiles >= 1 &&
        options.maxOpenFiles <= maxOpenFilesMax,
      `Cannot bound open files at ${options.maxOpenFiles}: not between 1 and ${maxOpenFilesMax}`,
    );
    this.maxOpenFiles = options.maxOpenFiles;
    this.#slots = new Semaphore({
      permits: options.maxOpenFiles,
      waitersMax: options.waitersMax ?? openFileWaitersMax,
      name: "open file",
    });
  }

  /** Gauge: handles open now (in use, idle, opening or closing); never above `maxOpenFiles`. */
  get openFiles(): number {
    return this.#slots.inUse;
  }

  /** Gauge: handles open with no operation on them, the ones an open may close. */
  get idleFiles(): number {
    return this.#idle.size;
  }

  /** Gauge: operations waiting for a handle because every one is in use. */
  get waiting(): number {
    return this.#slots.waiting;
  }

  /** Counter: idle handles closed to make room, since the cache was made. */
  get evictionsTotal(): number {
    return this.#evictionsTotal;
  }

  /**
   * A slot for a handle of `file` (not idle: its caller is about to use it). When none is free, the
   * least recently used idle handle closes for it, or, with none idle, it waits in the queue.
   */
  async acquireSlot(file: EvictableFile): Promise<Permit> {
    assert(!this.#idle.has(file), `Cannot open ${file.path} again: it has a handle`);
    const free = this.#slots.tryAcquire();
    if (free !== null) return free;
    // The queue is served in order; a close started now frees the slot of the first waiter.
    if (this.#slots.waiting >= this.#closesForWaiters) this.#evictOldest();
    return await this.#slots.acquire();
  }

  /** `file` has a handle and no operation on it: it may be closed, least recently used first. */
  idle(file: EvictableFile): void {
    this.#idle.touch(file);
    if (this.#slots.waiting > this.#closesForWaiters) this.#evictOldest();
  }

  /** `file` is in use or closed by its owner: its handle is not the cache's to close. */
  busy(file: EvictableFile): void {
    this.#idle.delete(file);
  }

  /** A handle closing for a waiter has closed and released its slot. */
  closedForWaiter(): void {
    assert(this.#closesForWaiters > 0, "a close for a waiter was counted when it started");
    this.#closesForWaiters--;
  }

  #evictOldest(): void {
    const victim = this.#idle.oldest();
    if (victim === undefined) return;
    this.#idle.delete(victim);
    this.#closesForWaiters++;
    this.#evictionsTotal++;
    victim.evict();
  }
}

/**
 * A file held open between uses whose handle is the cache's to close while idle (`OpenFileCache`):
 * each operation takes the handle for as long as it runs (reopening the file by its path when the
 * cache closed it) and gives it back. A handle in use is never closed. Before the cache closes an
 * idle handle it syncs what was written through this file since its last `sync`, so a close loses
 * no write and skips no fsync the owner is owed: a later `sync` with the handle still closed finds
 * everything durable and has nothing to do. A failed sync there is kept and thrown by every later
 * `sync`, since the kernel may have dropped the unsynced pages and a later fsync would not know.
 */
export class CachedFile implements DiskFile, EvictableFile {
  readonly path: string;
  readonly #cache: OpenFileCache;
  /** Opens the file again by its path; never creates it (a missing file is an error). */
  readonly #reopen: () => Promise<DiskFile>;
  #handle: DiskFile | null = null;
  /** The handle's slot in the cache, held while the handle is open. */
  #slot: Permit | null = null;
  /** A reopen under way, shared by the operations that arrive during it. */
  #opening: Promise<DiskFile> | null = null;
  /** The cache closing the idle handle; an operation that arrives waits for it, then reopens. */
  #closing: Promise<void> | null = null;
  /** Operations running now: the handle is not closed while any is. */
  #users = 0;
  /** Writes and truncations finished, and how many of them a sync has covered. */
  #writesDone = 0;
  #writesSynced = 0;
  #syncFailure: Error | null = null;
  #closed = false;

  private constructor(cache: OpenFileCache, path: string, reopen: () => Promise<DiskFile>) {
    this.#cache = cache;
    this.path = path;
    this.#reopen = reopen;
  }

  /** A file opened now by `open` (so that its errors are the open's), then reopened by `reopen`. */
  static async open(
    cache: OpenFileCache,
    path: string,
    open: () => Promise<DiskFile>,
    reopen: () => Promise<DiskFile>,
  ): Promise<CachedFile> {
    const file = new CachedFile(cache, path, reopen);
    const slot = await cache.acquireSlot(file);
    try {
      file.#handle = await open();
    } catch (error) {
      slot.release();
      throw error;
    }
    file.#slot = slot;
    cache.idle(file);
    return file;
  }

  /** Whether the file has a handle now (for tests and gauges). */
  get isOpen(): boolean {
    return this.#handle !== null;
  }

  readAt(buffer: Uint8Array, position: number): Promise<number> {
    return this.#use((file) => file.readAt(buffer, position));
  }

  writeAt(data: Uint8Array, position: number): Promise<void> {
    return this.#write((file) => file.writeAt(data, position));
  }

  append(data: Uint8Array): Promise<void> {
    return this.#write((file) => file.append(data));
  }

  sizeBytes(): Promise<number> {
    return this.#use((file) => file.sizeBytes());
  }

  truncate(lengthBytes: number): Promise<void> {
    return this.#write((file) => file.truncate(lengthBytes));
  }

  async sync(): Promise<void> {
    this.#checkOpen();
    await this.#closing;
    if (this.#syncFailure !== null) throw this.#syncFailure;
    // Closed by the cache with every write synced first: nothing to reopen the file for.
    if (this.#handle === null && this.#opening === null && this.#writesSynced === this.#writesDone) return;
    const covered = this.#writesDone;
    await this.#use((file) => file.sync());
    this.#writesSynced = Math.max(this.#writesSynced, covered);
  }

  /** Closes the handle if it has one; like any file's close, it does not sync. */
  async close(): Promise<void> {
    if (this.#closed) return;
    assert(this.#users === 0, `Cannot close ${this.path}: ${this.#users} operations are using it`);
    this.#closed = true;
    this.#cache.busy(this);
    await this.#closing;
    const handle = this.#handle;
    const slot = this.#slot;
    this.#handle = null;
    this.#slot = null;
    if (handle === null) return;
    try {
      await handle.close();
    } finally {
      slot!.release();
    }
  }

  /** Called by the cache on an idle handle: syncs what is unsynced, closes, and frees the slot. */
  evict(): void {
    assert(
      this.#users === 0 && this.#handle !== null && this.#closing === null && !this.#closed,
      `Cannot close ${this.path} for another file: it is in use or has no handle`,
    );
    const handle = this.#handle;
    const slot = this.#slot!;
    this.#handle = null;
    this.#slot = null;
    this.#closing = this.#syncAndClose(handle).finally(() => {
      this.#closing = null;
      slot.release();
      this.#cache.closedForWaiter();
    });
  }

  async #syncAndClose(handle: DiskFile): Promise<void> {
    const covered = this.#writesDone;
    try {
      if (covered > this.#writesSynced) await handle.sync();
      this.#writesSynced = covered;
    } catch (error) {
      this.#syncFailure = error as Error;
    }
    // After a good fsync a failing close loses nothing; after a failed one the failure is kept above.
    await handle.close().catch(() => {});
  }

  /**
   * A write or truncation: counted once it ends, failed or not, and before its handle may fall idle,
   * so the sync of a close or a later `sync` covers it.
   */
  #write(operation: (file: DiskFile) => Promise<void>): Promise<void> {
    return this.#use(operation, true);
  }

  async #use<T>(operation: (file: DiskFile) => Promise<T>, writes = false): Promise<T> {
    this.#checkOpen();
    if (this.#users++ === 0) this.#cache.busy(this);
    try {
      return await operation(await this.#handleNow());
    } finally {
      if (writes) this.#writesDone++;
      this.#users--;
      if (this.#users === 0 && this.#handle !== null && !this.#closed) this.#cache.idle(this);
    }
  }

  /** The open handle, after the close under way if any (none starts while in use) and a reopen. */
  async #handleNow(): Promise<DiskFile> {
    await this.#closing;
    if (this.#handle !== null) return this.#handle;
    this.#opening ??= this.#reopenWithSlot().finally(() => (this.#opening = null));
    return await this.#opening;
  }

  async #reopenWithSlot(): Promise<DiskFile> {
    const slot = await this.#cache.acquireSlot(this);
    try {
      this.#handle = await this.#reopen();
    } catch (error) {
      slot.release();
      throw error;
    }
    this.#slot = slot;
    return this.#handle;
  }

  #checkOpen(): void {
    assert(!this.#closed, `Cannot use ${this.path}: the file is closed`);
  }
}

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

/** The open-file cache's gauges and counter, read from it at scrape time. */
export function registerOpenFileMetrics(registry: Registry, cache: OpenFileCache): void {
  new Gauge({
    name: "strata_open_files",
    help: "Handles of files held open between uses (active segments' .log and .index), at most " +
      "[system] max_open_files.",
    registers: [registry],
    collect() {
      this.set(cache.openFiles);
    },
  });
  new Gauge({
    name: "strata_open_file_waiters",
    help: "Disk operations waiting for a file handle because every one of max_open_files is in use.",
    registers: [registry],
    collect() {
      this.set(cache.waiting);
    },
  });
  let counted = 0;
  new Counter({
    name: "strata_open_file_evictions_total",
    help: "Idle file handles closed (synced first when written) to make room under max_open_files.",
    registers: [registry],
    collect() {
      this.inc(cache.evictionsTotal - counted);
      counted = cache.evictionsTotal;
    },
  });
}
