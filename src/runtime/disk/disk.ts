/**
 * Durable I/O, injected. Every durable write goes through a `Disk`, so the simulator can replace
 * it with one that loses unsynced writes on a crash, and tests can stop it at the Nth durable
 * operation. Paths are plain strings; callers build them from ids, never from user input.
 */
export interface Disk {
  /** Opens an existing file, or creates it when `create` is set. */
  open(path: string, options?: OpenOptions): Promise<DiskFile>;
  /** Creates a new file, failing with `DiskError` code `exists` if the path is taken. */
  createExclusive(path: string, options?: CreateOptions): Promise<DiskFile>;
  /**
   * The whole of a small file (a record file: a superblock, consumer offsets, leader epochs), or null
   * when it does not exist; one larger than `maxBytes` is an error. A disk may read it in one
   * synchronous step: a boot reads one per partition, and a step costs the loop far less than the
   * handoffs of an open, a read and a close.
   */
  readSmallFile(path: string, maxBytes: number): Promise<Uint8Array | null>;
  /** Names (not paths) of the entries in a directory, sorted. */
  list(dirPath: string): Promise<string[]>;
  /** Size and kind of a path, or null when it does not exist. */
  stat(path: string): Promise<DiskStat | null>;
  /** Creates a directory and its missing parents. */
  mkdirp(dirPath: string): Promise<void>;
  /** Atomically replaces `to` with `from`; durable only after `fsyncDir` of the directory. */
  rename(fromPath: string, toPath: string): Promise<void>;
  /** Creates `newPath` as a second name of `existingPath`; fails with `exists` if taken. */
  link(existingPath: string, newPath: string): Promise<void>;
  /** Removes a file name; durable only after `fsyncDir` of the directory. */
  unlink(path: string): Promise<void>;
  /** Removes a directory tree; a missing tree is not an error. */
  removeTree(dirPath: string): Promise<void>;
  /** Makes the directory's entries (creates, renames, unlinks) durable. */
  fsyncDir(dirPath: string): Promise<void>;
  /** Total bytes of the file system holding `path` (for budgets given as a share of the disk). */
  capacityBytes(path: string): Promise<number>;
}

export interface OpenOptions extends CreateOptions {
  create?: boolean;
  readOnly?: boolean;
}

export interface CreateOptions {
  /**
   * A hint for files written once and not read back soon (an `fs` object store's objects): writes
   * whose position and length are multiples of `directIoAlignBytes`, and large reads, may skip
   * the page cache. Nothing else changes: the bytes, their order and `sync` mean what they mean
   * without it.
   */
  bypassCache?: boolean;
  /**
   * A hint for files held open long and used now and then (an active segment's `.log` and
   * `.index`): a disk that bounds its open files (`FileCacheDisk`) may close such a file while no
   * operation uses it, syncing first what was written since its last `sync`, and reopen it by its
   * path on the next operation. The caller promises that nothing replaces the path while the file
   * is open. Other disks ignore it.
   */
  reopenable?: boolean;
}

/** The alignment, in bytes, of the positions and lengths that `bypassCache` can send around the page cache. */
export const directIoAlignBytes = 4096;

export interface DiskStat {
  sizeBytes: number;
  isFile: boolean;
  isDirectory: boolean;
  mtimeMs: number;
}

export interface DiskFile {
  readonly path: string;
  /** Reads up to `buffer.length` bytes at `position`; returns how many were read (0 at the end). */
  readAt(buffer: Uint8Array, position: number): Promise<number>;
  /** Writes all of `data` at `position`. */
  writeAt(data: Uint8Array, position: number): Promise<void>;
  /** Writes all of `data` at the current end of the file. */
  append(data: Uint8Array): Promise<void>;
  sizeBytes(): Promise<number>;
  truncate(lengthBytes: number): Promise<void>;
  /** Makes the file's data durable. */
  sync(): Promise<void>;
  close(): Promise<void>;
}

export type DiskErrorCode = "not_found" | "exists" | "not_empty" | "io";

/**
 * A disk operation that failed: "Cannot <operation> <path>: <code>", with the message of the error
 * it wraps (the system's, e.g. ENOSPC, or a file worker's), which it keeps as its `cause`.
 */
export class DiskError extends Error {
  override name = "DiskError";
  readonly code: DiskErrorCode;
  readonly path: string;

  constructor(code: DiskErrorCode, operation: string, path: string, cause?: unknown) {
    const detail = cause instanceof Error ? `: ${cause.message}` : "";
    super(`Cannot ${operation} ${path}: ${code}${detail}`, cause === undefined ? undefined : { cause });
    this.code = code;
    this.path = path;
  }
}
