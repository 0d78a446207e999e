import * as fsSync from "node:fs";
import { constants as fsConstants } from "node:fs";
import * as fs from "node:fs/promises";
import { assert } from "../assert.ts";
import {
  type CreateOptions,
  type Disk,
  DiskError,
  type DiskErrorCode,
  type DiskFile,
  type DiskStat,
  type OpenOptions,
} from "./disk.ts";
import { directReadBytesMin, type DirectReads, sharedDirectReads } from "./direct_reads.ts";
import { type Permit, Semaphore } from "../cooperation/semaphore.ts";
import {
  offLoopWriteBytesMin,
  type ReadWorker,
  sharedReadWorker,
  sharedWriteWorker,
  type WorkerFile,
  type WriteWorker,
} from "./worker/file_workers.ts";
import { tooLarge } from "./file_ops.ts";

/**
 * The production `Disk`, over `node:fs/promises`; it runs unchanged on Node and Deno. Writes of
 * `offLoopWriteBytesMin` or more go through the write worker (`file_workers.ts`), since Deno runs
 * `node:fs` writes on the event loop's thread; `writeWorker: null` keeps every write here. Reads of
 * a piece's size go through the read worker (`file_workers.ts`), since Deno hands each `node:fs` read
 * to its blocking pool, whose lock the loop then waits on; `readWorker: null` keeps every read here.
 * The workers also carry out `bypassCache` (without it reads and writes are buffered); without the
 * read worker, `directReads` does it for reads (`directReads: null` reads buffered).
 */
export class NodeDisk implements Disk {
  readonly #writeWorker: WriteWorker | null;
  readonly #readWorker: ReadWorker | null;
  readonly #directReads: DirectReads | null;
  readonly #readTurns: Semaphore | null;

  constructor(
    options: {
      writeWorker?: WriteWorker | null;
      readWorker?: ReadWorker | null;
      directReads?: DirectReads | null;
      readTurns?: Semaphore | null;
    } = {},
  ) {
    this.#writeWorker = options.writeWorker === undefined ? sharedWriteWorker() : options.writeWorker;
    this.#readWorker = options.readWorker === undefined ? sharedReadWorker() : options.readWorker;
    this.#directReads = options.directReads === undefined ? sharedDirectReads() : options.directReads;
    this.#readTurns = options.readTurns === undefined ? sharedReadTurns() : options.readTurns;
  }

  /**
   * Starts the file workers now rather than at their first request: a worker's start holds the loop
   * for tens of milliseconds, which a server pays at boot instead of in a read (`WorkerRequests.start`).
   */
  startWorkers(): void {
    this.#writeWorker?.start();
    this.#readWorker?.start();
  }

  async open(path: string, options: OpenOptions = {}): Promise<DiskFile> {
    // Numeric flags: "a+" would force every write to the end of the file, "w+" would truncate it.
    const { O_RDONLY, O_RDWR, O_CREAT } = fsConstants;
    const flags = options.readOnly ? O_RDONLY : options.create ? O_RDWR | O_CREAT : O_RDWR;
    const handle = await wrap("open", path, () => fs.open(path, flags, 0o644));
    return new NodeDiskFile(path, handle, this.#fileOptions(!options.readOnly, options));
  }

  async createExclusive(path: string, options: CreateOptions = {}): Promise<DiskFile> {
    const handle = await wrap("create", path, () => fs.open(path, "wx+"));
    return new NodeDiskFile(path, handle, this.#fileOptions(true, options));
  }

  /** What a file opened here shares with the disk: the worker if it may write, and the read paths. */
  #fileOptions(writable: boolean, options: CreateOptions): FileOptions {
    return {
      writeWorker: writable ? this.#writeWorker : null,
      readWorker: this.#readWorker,
      directReads: options.bypassCache ? this.#directReads : null,
      readTurns: this.#readTurns,
      bypassCache: options.bypassCache ?? false,
    };
  }

  /**
   * One synchronous open, size, read and close: about 6 µs of the loop's time where the same steps
   * awaited one by one cost it 60 to 130 µs of handoffs to the runtime's threads (measured on the
   * 2-core VM, 2,000 files of 300 bytes).
   */
  readSmallFile(path: string, maxBytes: number): Promise<Uint8Array | null> {
    let fd: number;
    try {
      fd = fsSync.openSync(path, "r");
    } catch (error) {
      if (codeOf(error) === "not_found") return Promise.resolve(null);
      return Promise.reject(new DiskError(codeOf(error), "open", path, error));
    }
    try {
      const size = fsSync.fstatSync(fd).size;
      if (size > maxBytes) return Promise.reject(tooLarge(path, size, maxBytes));
      const bytes = new Uint8Array(size);
      let at = 0;
      // A regular file reads whole in one call; the bound covers a file that shrank meanwhile.
      for (let reads = 0; at < size && reads < 16; reads++) {
        const n = fsSync.readSync(fd, bytes, at, size - at, at);
        if (n === 0) break;
        at += n;
      }
      return Promise.resolve(bytes.subarray(0, at));
    } catch (error) {
      return Promise.reject(new DiskError(codeOf(error), "read", path, error));
    } finally {
      fsSync.closeSync(fd);
    }
  }

  list(dirPath: string): Promise<string[]> {
    return wrap("list", dirPath, async () => (await fs.readdir(dirPath)).sort());
  }

  async stat(path: string): Promise<DiskStat | null> {
    try {
      const s = await fs.stat(path);
      return { sizeBytes: s.size, isFile: s.isFile(), isDirectory: s.isDirectory(), mtimeMs: s.mtimeMs };
    } catch (error) {
      if (codeOf(error) === "not_found") return null;
      throw new DiskError(codeOf(error), "stat", path, error);
    }
  }

  async capacityBytes(path: string): Promise<number> {
    const s = await wrap("read the capacity of", path, () => fs.statfs(path));
    return Number(s.blocks) * Number(s.bsize);
  }

  async mkdirp(dirPath: string): Promise<void> {
    await wrap("create directory", dirPath, () => fs.mkdir(dirPath, { recursive: true }));
  }

  rename(fromPath: string, toPath: string): Promise<void> {
    return wrap("rename", `${fromPath} to ${toPath}`, () => fs.rename(fromPath, toPath));
  }

  link(existingPath: string, newPath: string): Promise<void> {
    return wrap("link", `${existingPath} to ${newPath}`, () => fs.link(existingPath, newPath));
  }

  unlink(path: string): Promise<void> {
    return wrap("unlink", path, () => fs.unlink(path));
  }

  removeTree(dirPath: string): Promise<void> {
    return wrap("remove", dirPath, () => fs.rm(dirPath, { recursive: true, force: true }));
  }

  async fsyncDir(dirPath: string): Promise<void> {
    const handle = await wrap("open directory", dirPath, () => fs.open(dirPath, "r"));
    try {
      await wrap("fsync directory", dirPath, () => handle.sync());
    } finally {
      await handle.close();
    }
  }
}

let nextFileId = 1;

interface FileOptions {
  writeWorker: WriteWorker | null;
  readWorker: ReadWorker | null;
  directReads: DirectReads | null;
  readTurns: Semaphore | null;
  bypassCache: boolean;
}

class NodeDiskFile implements DiskFile {
  readonly path: string;
  readonly #handle: fs.FileHandle;
  readonly #writeWorker: WriteWorker | null;
  readonly #readWorker: ReadWorker | null;
  readonly #directReads: DirectReads | null;
  readonly #readTurns: Semaphore | null;
  readonly #bypassCache: boolean;
  /**
   * How the file workers know this file; made on its first large read or write (a stat for the
   * inode), one for both.
   */
  #workerFile: Promise<WorkerFile> | null = null;
  /** Set once the worker could not open this file by its name: reads go through the handle from then. */
  #readWorkerRefused = false;
  /** The handle for direct reads, opened on the first large read; null when refused. */
  #directHandle: Promise<fs.FileHandle | null> | null = null;
  /** Writes not yet finished: a file is closed only once none is. */
  #writesInFlight = 0;
  #closed = false;

  constructor(
    path: string,
    handle: fs.FileHandle,
    options: FileOptions,
  ) {
    this.path = path;
    this.#handle = handle;
    this.#writeWorker = options.writeWorker;
    this.#readWorker = options.readWorker;
    this.#directReads = options.directReads;
    this.#readTurns = options.readTurns;
    this.#bypassCache = options.bypassCache;
  }

  async readAt(buffer: Uint8Array, position: number): Promise<number> {
    this.#checkOpen();
    using _turn = await readTurn(this.#readTurns);
    if (this.#readWorker !== null && this.#readsOffLoop(this.#readWorker, buffer.length)) {
      const read = await this.#readOffLoop(this.#readWorker, buffer, position);
      if (read !== null) return read;
    }
    if (this.#directReads !== null && buffer.length >= directReadBytesMin) {
      const read = await this.#readDirect(this.#directReads, buffer, position);
      if (read !== null) return read;
    }
    const { bytesRead } = await wrap(
      "read",
      this.path,
      () => this.#handle.read(buffer, 0, buffer.length, position),
    );
    return bytesRead;
  }

  /**
   * Whether a read of `length` bytes goes to the read worker: a piece's size, from
   * `offLoopReadBytesMin` to one slot, while the worker can open this file. A larger read (a whole
   * index at recovery) stays one task of the runtime's pool, rather than a slot's round trip and a
   * copy per MiB.
   */
  #readsOffLoop(worker: ReadWorker, length: number): boolean {
    return !this.#readWorkerRefused && length >= offLoopReadBytesMin && length <= worker.slotBytes;
  }

  /**
   * Null when the read is the handle's: the worker cannot have this file by its name (and never
   * will), or its queue is full (an overload costs the pool's lock, never a read).
   */
  async #readOffLoop(worker: ReadWorker, buffer: Uint8Array, position: number): Promise<number | null> {
    const file = await this.#asWorkerFile();
    const read = await wrap("read", this.path, () => worker.read(file, buffer, position));
    if (read === "stale") this.#readWorkerRefused = true;
    return typeof read === "number" ? read : null;
  }

  /** Null when the read must be buffered: the file system refuses, or no aligned buffer is free. */
  async #readDirect(directReads: DirectReads, buffer: Uint8Array, position: number): Promise<number | null> {
    this.#directHandle ??= wrap("open", this.path, async () => {
      const { ino } = await this.#handle.stat();
      return directReads.open(this.path, Number(ino));
    });
    const handle = await this.#directHandle;
    if (handle === null) return null;
    return await wrap("read", this.path, () => directReads.read(handle, buffer, position));
  }

  async writeAt(data: Uint8Array, position: number): Promise<void> {
    this.#checkOpen();
    this.#writesInFlight++;
    try {
      if (this.#writeWorker !== null && data.length >= offLoopWriteBytesMin) {
        await this.#writeOffLoop(this.#writeWorker, data, position);
      } else {
        await this.#writeHere(data, position);
      }
    } finally {
      this.#writesInFlight--;
    }
  }

  async #writeOffLoop(worker: WriteWorker, data: Uint8Array, position: number): Promise<void> {
    const file = await this.#asWorkerFile();
    await wrap("write", this.path, () => worker.write(file, data, position));
  }

  /** A failed stat is not kept: the next large read or write asks again. */
  #asWorkerFile(): Promise<WorkerFile> {
    this.#workerFile ??= wrap("stat", this.path, async () => ({
      id: nextFileId++,
      path: this.path,
      inode: Number((await this.#handle.stat()).ino),
      bypassCache: this.#bypassCache,
    })).catch((error) => {
      this.#workerFile = null;
      throw error;
    });
    return this.#workerFile;
  }

  async #writeHere(data: Uint8Array, position: number): Promise<void> {
    // A write may be short; the bound is the byte count, since every pass writes at least one.
    let written = 0;
    while (written < data.length) {
      const { bytesWritten } = await wrap(
        "write",
        this.path,
        () => this.#handle.write(data, written, data.length - written, position + written),
      );
      assert(bytesWritten > 0, `write to ${this.path} made no progress`);
      written += bytesWritten;
    }
  }

  async append(data: Uint8Array): Promise<void> {
    await this.writeAt(data, await this.sizeBytes());
  }

  async sizeBytes(): Promise<number> {
    this.#checkOpen();
    return (await wrap("stat", this.path, () => this.#handle.stat())).size;
  }

  truncate(lengthBytes: number): Promise<void> {
    this.#checkOpen();
    return wrap("truncate", this.path, () => this.#handle.truncate(lengthBytes));
  }

  sync(): Promise<void> {
    this.#checkOpen();
    return wrap("fsync", this.path, () => this.#handle.sync());
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    assert(
      this.#writesInFlight === 0,
      `Cannot close ${this.path}: ${this.#writesInFlight} writes are in flight`,
    );
    this.#closed = true;
    try {
      // Each worker closes only what it has: release is a no-op for a file it never saw. An open
      // that failed was reported to the operation that needed it, and leaves nothing to close.
      const file = await this.#workerFile?.catch(() => null);
      if (file) {
        await this.#writeWorker?.release(file.id);
        await this.#readWorker?.release(file.id);
      }
      // The same for the direct handle: a refused open left the reads buffered, nothing to close.
      const direct = await this.#directHandle?.catch(() => null);
      await direct?.close();
    } finally {
      await this.#handle.close();
    }
  }

  #checkOpen(): void {
    assert(!this.#closed, `Cannot use ${this.path}: the file is closed`);
  }
}

async function wrap<T>(operation: string, path: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw new DiskError(codeOf(error), operation, path, error);
  }
}

function codeOf(error: unknown): DiskErrorCode {
  const code = (error as { code?: string } | null)?.code;
  if (code === "ENOENT") return "not_found";
  if (code === "EEXIST") return "exists";
  if (code === "ENOTEMPTY") return "not_empty";
  return "io";
}

/**
 * Reads in flight at once, per process. Deno runs each `node:fs` read on a blocking-pool thread of
 * its own, as many as are asked for: `scripts/bench-read-concurrency.ts` (12,800 reads of 1 MiB) with
 * 32 readers kept 36 threads busy and left the loop's thread waiting for a core 1.7 s of 2.1 on the
 * 2-core test VM, a 1 ms timer up to 12.8 ms late; with 4, 1.0 s of 1.8 and 2.1 to 9.4 ms
 * (docs/TUNING.md, "Reads in flight").
 */
export const readsInFlightMax = 4;

/**
 * How big a read must be to go to the read worker: smaller ones (headers, index entries, markers) are
 * few and stay with the pool.
 */
export const offLoopReadBytesMin = 64 * 1024;

/** Bound on reads queued for a turn; beyond it a read goes at once, so an overload costs the bound, never a read. */
const readTurnWaitersMax = 4096;

let sharedTurns: Semaphore | null = null;

function sharedReadTurns(): Semaphore {
  sharedTurns ??= new Semaphore({
    permits: readsInFlightMax,
    waitersMax: readTurnWaitersMax,
    name: "disk read",
  });
  return sharedTurns;
}

async function readTurn(turns: Semaphore | null): Promise<Permit | null> {
  if (turns === null || turns.waiting >= turns.waitersMax) return null;
  return await turns.acquire();
}
