import { assert } from "../runtime/assert.ts";
import type { Disk, DiskFile } from "../runtime/disk.ts";

/**
 * Bound on chunk files a shard keeps open for polls' window reads. A storm's readers go through a
 * few chunks each, so a few dozen handles cover them; past the bound the least recently used idle
 * handle closes, and when every handle is in use a read opens its file for itself and closes it
 * when done.
 */
export const openChunkFilesMax = 64;

interface Handle {
  /** The open, or the file once open; shared by the reads that arrive while it opens. */
  readonly file: Promise<DiskFile>;
  /** Reads using the handle now: it closes only once they are done. */
  readers: number;
  /** The chunk left the cache (or the bound pushed the handle out): close when the last reader ends. */
  closing: boolean;
}

/**
 * Open read-only handles to a shard's chunk files, so a poll's window read is one disk operation
 * instead of an open, a read and a close: under a cold-read storm those three `node:fs` calls per
 * window were a measurable share of the loop's work between ticks (docs/TUNING.md, "Chunk file
 * handles"). A chunk file never changes once renamed into place, so a handle stays valid until its
 * chunk leaves the cache; the cache calls `forget` then, and the handle closes once its readers are
 * done. A file unlinked while a reader holds it stays readable to that reader, as with a plain open.
 */
export class ChunkFileHandles {
  readonly #disk: Disk;
  /** By chunk path, least recently used first (a Map keeps insertion order; a use re-inserts). */
  readonly #handles = new Map<string, Handle>();

  constructor(disk: Disk) {
    this.#disk = disk;
  }

  /** Handles held now, for tests and the bound's assertion. */
  get openCount(): number {
    return this.#handles.size;
  }

  /** Runs `read` with the chunk file at `path` open read-only; a failed open fails the read. */
  async read<T>(path: string, read: (file: DiskFile) => Promise<T>): Promise<T> {
    const handle = this.#take(path);
    try {
      return await read(await handle.file);
    } finally {
      handle.readers--;
      assert(handle.readers >= 0, "a chunk handle's readers never go below zero");
      if (handle.closing && handle.readers === 0) await this.#close(handle);
    }
  }

  /** The chunk at `path` left the cache: its handle is dropped and closes after its readers. */
  forget(path: string): void {
    const handle = this.#handles.get(path);
    if (handle === undefined) return;
    this.#handles.delete(path);
    this.#retire(handle);
  }

  /** Closes every idle handle and marks the rest to close after their readers (shutdown). */
  closeAll(): void {
    for (const path of [...this.#handles.keys()]) this.forget(path);
  }

  #take(path: string): Handle {
    const known = this.#handles.get(path);
    if (known !== undefined) {
      // Re-inserted: the map's order is the order of last use.
      this.#handles.delete(path);
      this.#handles.set(path, known);
      known.readers++;
      return known;
    }
    // Around the page cache, as the fill wrote it: the chunk cache is the cache (docs/TUNING.md,
    // "Direct I/O").
    const handle: Handle = {
      file: this.#disk.open(path, { readOnly: true, bypassCache: true }),
      readers: 1,
      closing: false,
    };
    // A failed open is not cached: the next read tries again (the chunk may be fetched anew).
    handle.file.catch(() => {
      if (this.#handles.get(path) === handle) this.#handles.delete(path);
      handle.closing = true;
    });
    if (this.#handles.size >= openChunkFilesMax && !this.#evictIdle()) {
      // Every handle is in use: this one serves its read and closes.
      handle.closing = true;
      return handle;
    }
    this.#handles.set(path, handle);
    assert(this.#handles.size <= openChunkFilesMax, "chunk handles stay within openChunkFilesMax");
    return handle;
  }

  /** Closes the least recently used handle nobody reads; false when every handle is in use. */
  #evictIdle(): boolean {
    for (const [path, handle] of this.#handles) {
      if (handle.readers > 0) continue;
      this.#handles.delete(path);
      this.#retire(handle);
      return true;
    }
    return false;
  }

  #retire(handle: Handle): void {
    handle.closing = true;
    if (handle.readers === 0) void this.#close(handle);
  }

  async #close(handle: Handle): Promise<void> {
    // A handle whose open failed has nothing to close; a close that fails leaves nothing to retry.
    const file = await handle.file.catch(() => null);
    await file?.close().catch(() => {});
  }
}
