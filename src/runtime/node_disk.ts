import { constants as fsConstants } from "node:fs";
import * as fs from "node:fs/promises";
import { assert } from "./assert.ts";
import {
  type Disk,
  DiskError,
  type DiskErrorCode,
  type DiskFile,
  type DiskStat,
  type OpenOptions,
} from "./disk.ts";

/** The production `Disk`, over `node:fs/promises`; it runs unchanged on Node and Deno. */
export class NodeDisk implements Disk {
  async open(path: string, options: OpenOptions = {}): Promise<DiskFile> {
    // Numeric flags: "a+" would force every write to the end of the file, "w+" would truncate it.
    const { O_RDONLY, O_RDWR, O_CREAT } = fsConstants;
    const flags = options.readOnly ? O_RDONLY : options.create ? O_RDWR | O_CREAT : O_RDWR;
    const handle = await wrap("open", path, () => fs.open(path, flags, 0o644));
    return new NodeDiskFile(path, handle);
  }

  async createExclusive(path: string): Promise<DiskFile> {
    const handle = await wrap("create", path, () => fs.open(path, "wx+"));
    return new NodeDiskFile(path, handle);
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

class NodeDiskFile implements DiskFile {
  readonly path: string;
  readonly #handle: fs.FileHandle;
  #closed = false;

  constructor(path: string, handle: fs.FileHandle) {
    this.path = path;
    this.#handle = handle;
  }

  async readAt(buffer: Uint8Array, position: number): Promise<number> {
    this.#checkOpen();
    const { bytesRead } = await wrap(
      "read",
      this.path,
      () => this.#handle.read(buffer, 0, buffer.length, position),
    );
    return bytesRead;
  }

  async writeAt(data: Uint8Array, position: number): Promise<void> {
    this.#checkOpen();
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
    this.#closed = true;
    await this.#handle.close();
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
