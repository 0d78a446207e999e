import { assert } from "../../runtime/assert.ts";
import type { Disk, DiskFile } from "../../runtime/disk/disk.ts";
import type { PieceSink } from "../../objectstore/object_store.ts";
import { readUpToInto, replaceFileWith } from "../../runtime/disk/file_ops.ts";
import type { BufferPool } from "../../runtime/memory/buffers.ts";
import { type PieceGate, yieldToReactor } from "../../runtime/cooperation/piece_gate.ts";
import type { ChunkSpan } from "./chunk_layout.ts";

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
    // Through the page cache, although the fill wrote around it: a chunk read again soon (a warm
    // reader, or the rest of a chunk a poll read part of) is then read from memory, as a local
    // segment is (docs/TUNING.md, "Direct I/O").
    const handle: Handle = {
      file: this.#disk.open(path, { readOnly: true }),
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

export interface ChunkFilesDeps {
  disk: Disk;
  /** This shard's cache directory. */
  dir: string;
  /** The shard's piece gate: each piece written into a chunk file waits for its turn (else a yield). */
  gate?: PieceGate;
  /** Buffers for the windows polls read, given back through `recycleWindow` once answered. */
  windowPool?: BufferPool;
  /**
   * Buffers for windows larger than `windowPool`'s (a Kafka fetch's), lent while fewer than its
   * bound are out; past it, or larger still, a window is a buffer of its own.
   */
  largeWindowPool?: BufferPool;
}

/**
 * A cached chunk's file holds fewer bytes than the chunk spans (truncated on disk): the cache drops
 * it and fetches the chunk again.
 */
export class ChunkFileShortError extends Error {
  override name = "ChunkFileShortError";
  constructor(key: string, at: number, read: number, wanted: number) {
    super(`Cannot read chunk file ${key} at byte ${at}: it holds ${read} of the ${wanted} bytes there`);
  }
}

/** The store answered a chunk's range with fewer bytes than the chunk spans: the object is short. */
export class ChunkObjectShortError extends Error {
  override name = "ChunkObjectShortError";
  constructor(key: string, got: number, wanted: number) {
    super(
      `Cannot fill chunk ${key}: the object gave ${got} of its ${wanted} bytes; it is shorter than its segment`,
    );
  }
}

/**
 * A shard's chunk files, one per cached chunk under the cache directory by cache key: the walk
 * that finds them at open, the fill that writes one (a `.part` file piece by piece, fsynced and
 * renamed into place), window reads through handles kept open while a chunk is cached, and
 * deletion. Which chunks are cached is the core's accounting, not this.
 */
export class ChunkFiles {
  readonly #disk: Disk;
  readonly #dir: string;
  readonly #gate: PieceGate | undefined;
  readonly #windowPool: BufferPool | undefined;
  readonly #largeWindowPool: BufferPool | undefined;
  /** Chunk files kept open for window reads; each is forgotten when its chunk leaves the cache. */
  readonly #handles: ChunkFileHandles;

  constructor(deps: ChunkFilesDeps) {
    this.#disk = deps.disk;
    this.#dir = deps.dir;
    this.#gate = deps.gate;
    this.#windowPool = deps.windowPool;
    this.#largeWindowPool = deps.largeWindowPool;
    this.#handles = new ChunkFileHandles(deps.disk);
  }

  /**
   * Walks the cache directory (made if missing): deletes the `.part` leftovers of interrupted
   * fills and returns every chunk file's size by cache key. Top-level names `skip` accepts (the
   * access table's) are left alone.
   */
  async walk(skip: (name: string) => boolean): Promise<Map<string, number>> {
    await this.#disk.mkdirp(this.#dir);
    const files = new Map<string, number>();
    await this.#walkUnder("", skip, files);
    return files;
  }

  async #walkUnder(
    relative: string,
    skip: (name: string) => boolean,
    files: Map<string, number>,
  ): Promise<void> {
    const dir = relative === "" ? this.#dir : `${this.#dir}/${relative}`;
    for (const name of await this.#disk.list(dir)) {
      const child = relative === "" ? name : `${relative}/${name}`;
      if (relative === "" && skip(name)) continue;
      const stat = await this.#disk.stat(`${this.#dir}/${child}`);
      if (stat?.isDirectory) await this.#walkUnder(child, skip, files);
      else if (name.endsWith(".part")) await this.#disk.unlink(`${this.#dir}/${child}`);
      else if (stat?.isFile) files.set(child, stat.sizeBytes);
    }
  }

  /**
   * Writes the chunk file of `key` from `source`, which hands the chunk's bytes to the writer it
   * is given, each piece at its position, and returns how many there were: into `key.part`,
   * truncated to that length (a retried attempt writes from position 0 again), fsynced, renamed into
   * place, the directory fsynced. Each piece takes a turn of the piece gate (else a yield after
   * it). Fewer bytes than `spanBytes` (a short object) fail with `ChunkObjectShortError`, and
   * nothing is renamed into place.
   */
  fill(key: string, spanBytes: number, source: (write: PieceSink) => Promise<number>): Promise<number> {
    // Around the page cache: filling fresh page-cache pages cost the write worker a third of a core in a
    // storm, and the chunk cache is itself the cache of these bytes (docs/TUNING.md, "Direct I/O").
    const path = `${this.#dir}/${key}`;
    // Each piece goes to the file as it arrives: the chunk is never whole in memory, and the store
    // may read the next piece into the same buffer once this one is written.
    return replaceFileWith(
      this.#disk,
      path,
      async (part) => {
        const sizeBytes = await source((piece, at) => this.#writePiece(part, piece, at));
        if (sizeBytes !== spanBytes) throw new ChunkObjectShortError(key, sizeBytes, spanBytes);
        return sizeBytes;
      },
      { tempPath: `${path}.part`, makeDirectory: true, bypassCache: true, trimTo: (sizeBytes) => sizeBytes },
    );
  }

  /**
   * One piece of a fill into its `.part` file. A write's copy into the page cache runs on the loop
   * thread in some runtimes (Deno's node:fs), about 0.8 ms per MiB: it is a piece of work like a
   * checksum, and takes the gate's turn.
   */
  async #writePiece(part: DiskFile, piece: Uint8Array, position: number): Promise<void> {
    const gate = this.#gate;
    if (gate !== undefined) await gate.turn();
    await part.writeAt(piece, position);
    if (gate === undefined) await yieldToReactor();
  }

  /**
   * `lengthBytes` of the chunk file of `key` from `from` (a position in the object, inside `span`),
   * fewer only at the chunk's end, into a buffer of the window pool when one fits. A file that ends
   * before that (truncated on disk) fails with `ChunkFileShortError`.
   */
  readWindow(key: string, span: ChunkSpan, from: number, lengthBytes: number): Promise<Uint8Array> {
    return this.#handles.read(`${this.#dir}/${key}`, async (file) => {
      const length = Math.min(lengthBytes, span.end - from);
      const buffer = this.#windowBuffer(length);
      const read = await readUpToInto(file, buffer, from - span.start);
      if (read < length) {
        this.recycleWindow(buffer);
        throw new ChunkFileShortError(key, from - span.start, read, length);
      }
      return buffer;
    });
  }

  /** A buffer for a window of `lengthBytes`: the smallest pool's that fits and lends, else its own. */
  #windowBuffer(lengthBytes: number): Uint8Array {
    const small = this.#windowPool;
    if (small !== undefined && lengthBytes <= small.bufferBytes) return small.take(lengthBytes);
    return this.#largeWindowPool?.takeBounded(lengthBytes) ?? new Uint8Array(lengthBytes);
  }

  /** Takes back a window `readWindow` returned, once nothing reads it (a no-op for other bytes). */
  recycleWindow(bytes: Uint8Array): void {
    // Each pool takes back only what it lent.
    this.#windowPool?.give(bytes);
    this.#largeWindowPool?.give(bytes);
  }

  /** The chunk left the cache: its handle closes once its readers are done. The file is left as it is. */
  forget(key: string): void {
    this.#handles.forget(`${this.#dir}/${key}`);
  }

  /** Deletes the chunk file of `key`, its handle forgotten first. */
  delete(key: string): Promise<void> {
    this.forget(key);
    return this.#disk.unlink(`${this.#dir}/${key}`);
  }

  /** Closes the handles held open (shutdown). */
  closeAll(): void {
    this.#handles.closeAll();
  }
}
