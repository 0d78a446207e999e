import { assert } from "./assert.ts";
import { LruKeys } from "./lru_keys.ts";
import type { Permit } from "./permit.ts";
import { Semaphore } from "./semaphore.ts";

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
