import type { WorkerFs } from "../../../src/runtime/disk/worker/worker_file_table.ts";

interface MemoryFile {
  inode: number;
  bytes: Uint8Array;
}

interface OpenFile {
  file: MemoryFile;
  direct: boolean;
}

/** An error as `node:fs` throws it: a message that starts with the code, and the code. */
export function fsError(code: string, what: string): Error {
  return Object.assign(new Error(`${code}: ${what}`), { code });
}

/**
 * An in-memory `WorkerFs` for the file workers' handlers, with the faults their tests need: a file
 * system that refuses `O_DIRECT` on open or on I/O (EINVAL), writes cut short, writes that make no
 * progress, one failure to throw from the next read or write, and buffered writes that fail. Paths name files; removing or
 * replacing one leaves open descriptors on the old file, as on a real file system.
 */
export class MemoryWorkerFs implements WorkerFs {
  readonly constants = { O_RDONLY: 0, O_WRONLY: 1, O_DIRECT: 0x4000 };
  /** Open with `O_DIRECT` fails with EINVAL. */
  refuseDirectOpen = false;
  /** Reads and writes through a direct descriptor fail with EINVAL. */
  refuseDirectIo = false;
  /** Each write writes at most this many bytes (a short write), or none at all with 0. */
  writeBytesMax = Number.POSITIVE_INFINITY;
  /** Thrown by the next read or write, once. */
  nextIoError: Error | null = null;
  /** Thrown by every write through a buffered descriptor (direct ones still write). */
  bufferedWriteError: Error | null = null;
  /** Every open, with its flags, in order. */
  readonly opens: { path: string; direct: boolean }[] = [];
  readonly #files = new Map<string, MemoryFile>();
  readonly #open = new Map<number, OpenFile>();
  #nextFd = 3;
  #nextInode = 1;

  /** Creates (or replaces) the file at `path`; its inode. */
  create(path: string, bytes: Uint8Array = new Uint8Array(0)): number {
    const inode = this.#nextInode++;
    this.#files.set(path, { inode, bytes: bytes.slice() });
    return inode;
  }

  remove(path: string): void {
    this.#files.delete(path);
  }

  /** The bytes of the file now at `path`. */
  bytesOf(path: string): Uint8Array {
    const file = this.#files.get(path);
    if (file === undefined) throw new Error(`no file at ${path}`);
    return file.bytes;
  }

  /** Gauge: descriptors open. */
  get openCount(): number {
    return this.#open.size;
  }

  openSync(path: string, flags: number | string): number {
    const direct = typeof flags === "number" && (flags & this.constants.O_DIRECT) !== 0;
    this.opens.push({ path, direct });
    const file = this.#files.get(path);
    if (file === undefined) throw fsError("ENOENT", `no such file or directory, open '${path}'`);
    if (direct && this.refuseDirectOpen) throw fsError("EINVAL", `invalid argument, open '${path}'`);
    const fd = this.#nextFd++;
    this.#open.set(fd, { file, direct });
    return fd;
  }

  fstatSync(fd: number): { ino: number } {
    return { ino: this.#opened(fd).file.inode };
  }

  closeSync(fd: number): void {
    this.#opened(fd);
    this.#open.delete(fd);
  }

  readSync(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): number {
    const { file } = this.#checkedIo(fd);
    const end = Math.min(file.bytes.length, position + length);
    if (end <= position) return 0;
    buffer.set(file.bytes.subarray(position, end), offset);
    return end - position;
  }

  writeSync(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): number {
    const { file, direct } = this.#checkedIo(fd);
    if (!direct && this.bufferedWriteError !== null) throw this.bufferedWriteError;
    const n = Math.min(length, this.writeBytesMax);
    if (position + n > file.bytes.length) {
      const grown = new Uint8Array(position + n);
      grown.set(file.bytes);
      file.bytes = grown;
    }
    file.bytes.set(buffer.subarray(offset, offset + n), position);
    return n;
  }

  #opened(fd: number): OpenFile {
    const open = this.#open.get(fd);
    if (open === undefined) throw fsError("EBADF", `bad file descriptor ${fd}`);
    return open;
  }

  #checkedIo(fd: number): OpenFile {
    const open = this.#opened(fd);
    const error = this.nextIoError;
    if (error !== null) {
      this.nextIoError = null;
      throw error;
    }
    if (open.direct && this.refuseDirectIo) throw fsError("EINVAL", "invalid argument");
    return open;
  }
}
