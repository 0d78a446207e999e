import { assert } from "./assert.ts";
import type { DiskFile } from "./disk.ts";
import type { EvictableFile, OpenFileCache } from "./open_file_cache.ts";
import type { Permit } from "./permit.ts";

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
