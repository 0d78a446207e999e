import { assert } from "../../assert.ts";
import type { FileRequest } from "./file_worker_protocol.ts";

/**
 * The synchronous file calls a file worker makes, with `node:fs`'s names and meanings: `node:fs`
 * itself on the worker's thread, an in-memory file system in tests. `O_DIRECT` is undefined where the
 * platform has none.
 */
export interface WorkerFs {
  readonly constants: {
    readonly O_RDONLY: number;
    readonly O_WRONLY: number;
    readonly O_DIRECT?: number | undefined;
  };
  openSync(path: string, flags: number | string): number;
  fstatSync(fd: number): { readonly ino: number };
  closeSync(fd: number): void;
  readSync(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): number;
  writeSync(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): number;
}

/** A file as the caller opened it: the worker opens it by `path` and takes it only if it is still `inode`. */
export interface NamedFile {
  readonly path: string;
  readonly inode: number;
}

/**
 * The files a worker keeps, by the caller's id: each one's name and inode as the caller sent them
 * (null once it is stale: the read worker could not have it by its name), and its buffered and
 * direct descriptors, opened on first use and kept until `close`. Descriptors are the worker's own,
 * opened by path, because a runtime's descriptors need not be shared between threads (Deno's
 * `node:fs` ones are not). A direct descriptor of null means the file is read or written buffered.
 */
export class WorkerFileTable {
  readonly fs: WorkerFs;
  readonly #workerName: string;
  readonly #files = new Map<number, NamedFile | null>();
  readonly #fds = new Map<number, number>();
  readonly #directFds = new Map<number, number | null>();

  constructor(fs: WorkerFs, workerName: string) {
    this.fs = fs;
    this.#workerName = workerName;
  }

  /** Gauge: files known (stale ones included), for tests. */
  get size(): number {
    return this.#files.size;
  }

  /**
   * The file a request is about, learnt from its name and inode when the request carries them; null
   * when it is stale. Throws for a file the worker was never told of.
   */
  fileOf(request: FileRequest): NamedFile | null {
    if (request.path !== undefined) {
      assert(request.inode !== undefined, `a ${this.#workerName} request names a file with its inode`);
      this.#files.set(request.fileId, { path: request.path, inode: request.inode });
    }
    const file = this.#files.get(request.fileId);
    if (file === undefined) {
      throw new Error(`Cannot find file ${request.fileId}: the ${this.#workerName} was not told of it`);
    }
    return file;
  }

  /** Marks a file stale: every later request about it finds it so, until it is closed. */
  markStale(fileId: number): void {
    this.#files.set(fileId, null);
  }

  /**
   * Opens `file` by its name with `flags`: the descriptor if it is still the caller's file (the same
   * inode), or null, with nothing left open, when another file is there now. Throws what the open
   * throws (ENOENT when the name is gone).
   */
  openSame(file: NamedFile, flags: number | string): number | null {
    const fd = this.fs.openSync(file.path, flags);
    if (this.fs.fstatSync(fd).ino === file.inode) return fd;
    this.fs.closeSync(fd);
    return null;
  }

  /** The file's buffered descriptor, if it has one. */
  bufferedFd(fileId: number): number | undefined {
    return this.#fds.get(fileId);
  }

  keepBufferedFd(fileId: number, fd: number): void {
    this.#fds.set(fileId, fd);
  }

  /** The file's direct descriptor; null when it is read or written buffered, undefined before the first try. */
  directFd(fileId: number): number | null | undefined {
    return this.#directFds.get(fileId);
  }

  keepDirectFd(fileId: number, fd: number | null): void {
    this.#directFds.set(fileId, fd);
  }

  /** Closes the file's direct descriptor after the file system refused it: buffered from then on. */
  refuseDirect(fileId: number): void {
    const fd = this.#directFds.get(fileId);
    if (fd !== undefined && fd !== null) this.fs.closeSync(fd);
    this.#directFds.set(fileId, null);
  }

  /** Closes both descriptors of a file, if it has them, and forgets it. */
  close(fileId: number): void {
    this.#files.delete(fileId);
    for (const map of [this.#fds, this.#directFds]) {
      const fd = map.get(fileId);
      map.delete(fileId);
      if (fd !== undefined && fd !== null) this.fs.closeSync(fd);
    }
  }
}
