import { readSmallFileByOpen } from "../runtime/disk/file_ops.ts";
import { assert } from "../runtime/assert.ts";
import {
  type Disk,
  DiskError,
  type DiskFile,
  type DiskStat,
  type OpenOptions,
} from "../runtime/disk/disk.ts";
import type { Rng } from "../runtime/rng.ts";

/**
 * An in-memory `Disk` with crash semantics, for the simulator. Files are inodes named by
 * directory entries. What a crash keeps follows POSIX durability:
 *
 * - A file's bytes are durable up to its last `sync`. Writes after it are kept on a crash as a
 *   random prefix of them, in order, the last kept one possibly torn at a random byte (a write is
 *   not atomic on power loss).
 * - A directory's entries (create, rename, link, unlink) are durable up to its last `fsyncDir`.
 *   Changes after it are kept as a random prefix of them, in order.
 * - Directories themselves are durable when made (a simplification: Strata creates its
 *   directories once and fsyncs their parents where it matters).
 *
 * Every choice a crash makes comes from the injected `Rng`, so a seed replays exactly.
 */
export class SimDisk implements Disk {
  readonly #rng: Rng;
  readonly #capacityBytes: number;
  readonly #dirs = new Map<string, SimDirectory>();
  #nextInode = 1;
  /** Open handles, closed by a crash. */
  readonly #handles = new Set<SimFile>();

  /** A disk whose fsync does nothing: only for proving that the simulator's checks catch lost data. */
  readonly #lyingFsync: boolean;

  constructor(rng: Rng, options: { capacityBytes?: number; lyingFsync?: boolean } = {}) {
    this.#rng = rng;
    this.#capacityBytes = options.capacityBytes ?? 1024 ** 4;
    this.#lyingFsync = options.lyingFsync ?? false;
    this.#dirs.set("/", new SimDirectory());
  }

  open(path: string, options: OpenOptions = {}): Promise<DiskFile> {
    const { dir, name } = this.#parent(path, "open");
    let inode = dir.entries.get(name);
    if (inode === undefined) {
      if (!options.create || options.readOnly) {
        return Promise.reject(new DiskError("not_found", "open", path));
      }
      inode = this.#newInode();
      dir.change({ kind: "set", name, inode });
    }
    return Promise.resolve(this.#handle(path, inode, options.readOnly ?? false));
  }

  createExclusive(path: string): Promise<DiskFile> {
    const { dir, name } = this.#parent(path, "create");
    if (dir.entries.has(name) || this.#dirs.has(normalize(path))) {
      return Promise.reject(new DiskError("exists", "create", path));
    }
    const inode = this.#newInode();
    dir.change({ kind: "set", name, inode });
    return Promise.resolve(this.#handle(path, inode, false));
  }

  readSmallFile(path: string, maxBytes: number): Promise<Uint8Array | null> {
    return readSmallFileByOpen(this, path, maxBytes);
  }

  list(dirPath: string): Promise<string[]> {
    const path = normalize(dirPath);
    const dir = this.#dirs.get(path);
    if (dir === undefined) return Promise.reject(new DiskError("not_found", "list", dirPath));
    const subdirs = [...this.#dirs.keys()].filter((d) => d !== path && parentOf(d) === path).map(baseOf);
    return Promise.resolve([...new Set([...dir.entries.keys(), ...subdirs])].sort());
  }

  stat(path: string): Promise<DiskStat | null> {
    const p = normalize(path);
    if (this.#dirs.has(p)) {
      return Promise.resolve({ sizeBytes: 0, isFile: false, isDirectory: true, mtimeMs: 0 });
    }
    const dir = this.#dirs.get(parentOf(p));
    const inode = dir?.entries.get(baseOf(p));
    if (inode === undefined) return Promise.resolve(null);
    return Promise.resolve({ sizeBytes: inode.data.length, isFile: true, isDirectory: false, mtimeMs: 0 });
  }

  capacityBytes(): Promise<number> {
    return Promise.resolve(this.#capacityBytes);
  }

  mkdirp(dirPath: string): Promise<void> {
    const parts = normalize(dirPath).split("/").filter((x) => x !== "");
    let path = "";
    for (const part of parts) {
      path += `/${part}`;
      const parent = this.#dirs.get(parentOf(path));
      if (parent?.entries.has(part)) return Promise.reject(new DiskError("exists", "create directory", path));
      if (!this.#dirs.has(path)) this.#dirs.set(path, new SimDirectory());
    }
    return Promise.resolve();
  }

  rename(fromPath: string, toPath: string): Promise<void> {
    const from = this.#parent(fromPath, "rename");
    const to = this.#parent(toPath, "rename");
    const inode = from.dir.entries.get(from.name);
    if (inode === undefined) return Promise.reject(new DiskError("not_found", "rename", fromPath));
    from.dir.change({ kind: "delete", name: from.name });
    to.dir.change({ kind: "set", name: to.name, inode });
    return Promise.resolve();
  }

  link(existingPath: string, newPath: string): Promise<void> {
    const from = this.#parent(existingPath, "link");
    const to = this.#parent(newPath, "link");
    const inode = from.dir.entries.get(from.name);
    if (inode === undefined) return Promise.reject(new DiskError("not_found", "link", existingPath));
    if (to.dir.entries.has(to.name)) return Promise.reject(new DiskError("exists", "link", newPath));
    to.dir.change({ kind: "set", name: to.name, inode });
    return Promise.resolve();
  }

  unlink(path: string): Promise<void> {
    const { dir, name } = this.#parent(path, "unlink");
    if (!dir.entries.has(name)) return Promise.reject(new DiskError("not_found", "unlink", path));
    dir.change({ kind: "delete", name });
    return Promise.resolve();
  }

  removeTree(dirPath: string): Promise<void> {
    const root = normalize(dirPath);
    for (const path of [...this.#dirs.keys()]) {
      if (path === root || path.startsWith(`${root}/`)) this.#dirs.delete(path);
    }
    const parent = this.#dirs.get(parentOf(root));
    if (parent?.entries.has(baseOf(root))) parent.change({ kind: "delete", name: baseOf(root) });
    return Promise.resolve();
  }

  fsyncDir(dirPath: string): Promise<void> {
    const dir = this.#dirs.get(normalize(dirPath));
    if (dir === undefined) return Promise.reject(new DiskError("not_found", "open directory", dirPath));
    dir.sync();
    return Promise.resolve();
  }

  /**
   * The machine loses power: every open handle is gone, each directory keeps its durable entries
   * plus a random prefix of its later changes, and each file its synced bytes plus a random prefix of
   * its later writes, the last one possibly torn.
   */
  crash(): void {
    for (const handle of this.#handles) handle.invalidate();
    this.#handles.clear();
    const inodes = new Set<SimInode>();
    for (const dir of this.#dirs.values()) {
      dir.crash(this.#rng);
      for (const inode of dir.entries.values()) inodes.add(inode);
    }
    for (const inode of inodes) inode.crash(this.#rng);
  }

  /** Bytes of a file as it is now, for invariant checkers; null when absent. */
  peek(path: string): Uint8Array | null {
    const p = normalize(path);
    const inode = this.#dirs.get(parentOf(p))?.entries.get(baseOf(p));
    return inode === undefined ? null : inode.data.slice();
  }

  #newInode(): SimInode {
    return new SimInode(this.#nextInode++);
  }

  #handle(path: string, inode: SimInode, readOnly: boolean): SimFile {
    const handle = new SimFile(path, inode, readOnly, this.#lyingFsync, (h) => this.#handles.delete(h));
    this.#handles.add(handle);
    return handle;
  }

  #parent(path: string, operation: string): { dir: SimDirectory; name: string } {
    const p = normalize(path);
    const dir = this.#dirs.get(parentOf(p));
    if (dir === undefined) throw new DiskError("not_found", operation, path);
    return { dir, name: baseOf(p) };
  }
}

type DirectoryChange = { kind: "set"; name: string; inode: SimInode } | { kind: "delete"; name: string };

/** Bound on a directory's changes pending a `fsyncDir`; beyond it the oldest are made durable. */
const pendingChangesMax = 100_000;

class SimDirectory {
  /** The entries as the process sees them. */
  entries = new Map<string, SimInode>();
  #durable = new Map<string, SimInode>();
  #pending: DirectoryChange[] = [];

  change(c: DirectoryChange): void {
    if (c.kind === "set") this.entries.set(c.name, c.inode);
    else this.entries.delete(c.name);
    this.#pending.push(c);
    // Writeback would have flushed the oldest changes long before: they become durable.
    if (this.#pending.length > pendingChangesMax) apply(this.#durable, this.#pending.shift()!);
  }

  sync(): void {
    this.#durable = new Map(this.entries);
    this.#pending = [];
  }

  crash(rng: Rng): void {
    const kept = rng.int(0, this.#pending.length);
    for (const c of this.#pending.slice(0, kept)) apply(this.#durable, c);
    this.entries = new Map(this.#durable);
    this.#pending = [];
  }
}

function apply(entries: Map<string, SimInode>, c: DirectoryChange): void {
  if (c.kind === "set") entries.set(c.name, c.inode);
  else entries.delete(c.name);
}

type FileWrite = { kind: "write"; position: number; bytes: Uint8Array } | {
  kind: "truncate";
  length: number;
};

class SimInode {
  readonly id: number;
  data: Uint8Array = new Uint8Array(0);
  #durable: Uint8Array = new Uint8Array(0);
  #pending: FileWrite[] = [];

  constructor(id: number) {
    this.id = id;
  }

  write(w: FileWrite): void {
    this.data = applyWrite(this.data, w);
    this.#pending.push(w);
  }

  sync(): void {
    this.#durable = this.data.slice();
    this.#pending = [];
  }

  crash(rng: Rng): void {
    const kept = rng.int(0, this.#pending.length);
    let data: Uint8Array = this.#durable;
    this.#pending.slice(0, kept).forEach((w, i) => {
      const torn = i === kept - 1 && w.kind === "write" && rng.chance(0.5);
      data = applyWrite(data, torn ? { ...w, bytes: w.bytes.subarray(0, rng.int(0, w.bytes.length)) } : w);
    });
    this.data = data;
    this.#durable = data.slice();
    this.#pending = [];
  }
}

function applyWrite(data: Uint8Array, w: FileWrite): Uint8Array {
  if (w.kind === "truncate") {
    const next = new Uint8Array(w.length);
    next.set(data.subarray(0, Math.min(data.length, w.length)));
    return next;
  }
  const end = w.position + w.bytes.length;
  const next = end > data.length ? new Uint8Array(end) : data.slice();
  if (end > data.length) next.set(data);
  next.set(w.bytes, w.position);
  return next;
}

class SimFile implements DiskFile {
  readonly path: string;
  readonly #inode: SimInode;
  readonly #readOnly: boolean;
  readonly #lyingFsync: boolean;
  readonly #onClose: (h: SimFile) => void;
  #open = true;
  #crashed = false;

  constructor(
    path: string,
    inode: SimInode,
    readOnly: boolean,
    lyingFsync: boolean,
    onClose: (h: SimFile) => void,
  ) {
    this.path = path;
    this.#inode = inode;
    this.#readOnly = readOnly;
    this.#lyingFsync = lyingFsync;
    this.#onClose = onClose;
  }

  /** A crash took the process: the handle is dead. */
  invalidate(): void {
    this.#crashed = true;
  }

  // deno-lint-ignore require-await
  async readAt(buffer: Uint8Array, position: number): Promise<number> {
    this.#check("read");
    const bytes = this.#inode.data.subarray(position, position + buffer.length);
    buffer.set(bytes);
    return bytes.length;
  }

  // deno-lint-ignore require-await
  async writeAt(data: Uint8Array, position: number): Promise<void> {
    this.#checkWritable();
    this.#inode.write({ kind: "write", position, bytes: data.slice() });
  }

  // deno-lint-ignore require-await
  async append(data: Uint8Array): Promise<void> {
    this.#checkWritable();
    this.#inode.write({ kind: "write", position: this.#inode.data.length, bytes: data.slice() });
  }

  // deno-lint-ignore require-await
  async sizeBytes(): Promise<number> {
    this.#check("stat");
    return this.#inode.data.length;
  }

  // deno-lint-ignore require-await
  async truncate(lengthBytes: number): Promise<void> {
    this.#checkWritable();
    this.#inode.write({ kind: "truncate", length: lengthBytes });
  }

  // deno-lint-ignore require-await
  async sync(): Promise<void> {
    this.#check("sync");
    if (!this.#lyingFsync) this.#inode.sync();
  }

  close(): Promise<void> {
    if (this.#open) this.#onClose(this);
    this.#open = false;
    return Promise.resolve();
  }

  #check(operation: string): void {
    if (this.#crashed) throw new DiskError("io", operation, `${this.path} (the process crashed)`);
    assert(this.#open, `Cannot ${operation} ${this.path}: the handle is closed`);
  }

  #checkWritable(): void {
    this.#check("write");
    if (this.#readOnly) throw new DiskError("io", "write", `${this.path} (opened read-only)`);
  }
}

function normalize(path: string): string {
  const parts = path.split("/").filter((x) => x !== "" && x !== ".");
  return `/${parts.join("/")}`;
}

function parentOf(path: string): string {
  const i = path.lastIndexOf("/");
  return i <= 0 ? "/" : path.slice(0, i);
}

function baseOf(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}
