import type { PieceSink } from "../objectstore/object_store.ts";
import { readUpToInto } from "../runtime/read_up_to.ts";
import type { BufferPool } from "../runtime/buffer_pool.ts";
import type { Disk, DiskFile } from "../runtime/disk.ts";
import type { PieceGate } from "../runtime/piece_gate.ts";
import { replaceFileWith } from "../runtime/replace_file.ts";
import { yieldToReactor } from "../runtime/yield_to_reactor.ts";
import { ChunkFileHandles } from "./chunk_file_handles.ts";
import type { ChunkSpan } from "./chunk_layout.ts";

export interface ChunkFilesDeps {
  disk: Disk;
  /** This shard's cache directory. */
  dir: string;
  /** The shard's piece gate: each piece written into a chunk file waits for its turn (else a yield). */
  gate?: PieceGate;
  /** Buffers for the windows polls read, given back through `recycleWindow` once answered. */
  windowPool?: BufferPool;
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
  /** Chunk files kept open for window reads; each is forgotten when its chunk leaves the cache. */
  readonly #handles: ChunkFileHandles;

  constructor(deps: ChunkFilesDeps) {
    this.#disk = deps.disk;
    this.#dir = deps.dir;
    this.#gate = deps.gate;
    this.#windowPool = deps.windowPool;
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
   * it); `naive` (the benchmark's switch) writes without either and takes the chunk whole. Fewer
   * bytes than `spanBytes` (a short object) fail with `ChunkObjectShortError`, and nothing is
   * renamed into place.
   */
  fill(
    key: string,
    spanBytes: number,
    naive: boolean,
    source: (write: PieceSink) => Promise<number>,
  ): Promise<number> {
    // Around the page cache: filling fresh page-cache pages cost the write worker a third of a core in a
    // storm, and the chunk cache is itself the cache of these bytes (docs/TUNING.md, "Direct I/O").
    const path = `${this.#dir}/${key}`;
    const options = { tempPath: `${path}.part`, makeDirectory: true, bypassCache: true };
    const whole = async (write: PieceSink) => {
      const sizeBytes = await source(write);
      if (sizeBytes !== spanBytes) throw new ChunkObjectShortError(key, sizeBytes, spanBytes);
      return sizeBytes;
    };
    if (naive) {
      return replaceFileWith(
        this.#disk,
        path,
        (part) => whole((piece, at) => part.writeAt(piece, at)),
        options,
      );
    }
    // Each piece goes to the file as it arrives: the chunk is never whole in memory, and the store
    // may read the next piece into the same buffer once this one is written.
    return replaceFileWith(
      this.#disk,
      path,
      (part) => whole((piece, at) => this.#writePiece(part, piece, at)),
      { ...options, trimTo: (sizeBytes) => sizeBytes },
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
      const buffer = this.#windowPool?.take(length) ?? new Uint8Array(length);
      const read = await readUpToInto(file, buffer, from - span.start);
      if (read < length) {
        this.recycleWindow(buffer);
        throw new ChunkFileShortError(key, from - span.start, read, length);
      }
      return buffer;
    });
  }

  /** Takes back a window `readWindow` returned, once nothing reads it (a no-op for other bytes). */
  recycleWindow(bytes: Uint8Array): void {
    this.#windowPool?.give(bytes);
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
