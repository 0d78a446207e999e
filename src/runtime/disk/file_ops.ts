import { assert } from "../assert.ts";
import { type CreateOptions, type Disk, DiskError, type DiskFile } from "./disk.ts";

/**
 * The directory that holds `path`: everything before its last `/` (`/` itself for a file at the
 * root). The path must name its directory: a bare file name has none to give.
 */
export function dirOf(path: string): string {
  const slash = path.lastIndexOf("/");
  assert(slash >= 0, `a path names its directory: ${path}`);
  return slash === 0 ? "/" : path.slice(0, slash);
}

/** Unlinks `path`; a file already gone is not an error (any other failure is). */
export async function unlinkIfPresent(disk: Disk, path: string): Promise<void> {
  try {
    await disk.unlink(path);
  } catch (error) {
    if (!(error instanceof DiskError && error.code === "not_found")) throw error;
  }
}

/**
 * Positioned reads that do not stop at a short read: `DiskFile.readAt` may return fewer bytes than
 * asked, so these read again until the buffer is full or the file ends. Each pass reads at least one
 * byte or ends the loop, so a read of `length` bytes takes at most `length` passes.
 */

/** Reads `length` bytes at `position`, fewer only at the end of the file. */
export async function readUpTo(file: DiskFile, position: number, length: number): Promise<Uint8Array> {
  const buffer = new Uint8Array(length);
  return buffer.subarray(0, await readUpToInto(file, buffer, position));
}

/** Fills `buffer` from `position` (fewer bytes only at the end of the file); returns how many. */
export async function readUpToInto(file: DiskFile, buffer: Uint8Array, position: number): Promise<number> {
  let filled = 0;
  while (filled < buffer.length) {
    const n = await file.readAt(buffer.subarray(filled), position + filled);
    if (n === 0) return filled;
    filled += n;
  }
  return filled;
}

/** A small file's first read takes this much; most record files (superblocks, offsets) fit in it. */
export const smallFileFirstReadBytes = 4096;

/**
 * `Disk.readSmallFile` from a disk's own `open`, `readAt` and `close`: one open, one read and one
 * close for a file that fits in `smallFileFirstReadBytes`, its size asked only when the first read
 * fills its buffer. Disks without a faster way (the simulator's) read small files so.
 */
export async function readSmallFileByOpen(
  disk: Disk,
  path: string,
  maxBytes: number,
): Promise<Uint8Array | null> {
  let file: DiskFile;
  try {
    file = await disk.open(path, { readOnly: true });
  } catch (error) {
    if (error instanceof DiskError && error.code === "not_found") return null;
    throw error;
  }
  try {
    return await readWhole(file, path, maxBytes);
  } finally {
    await file.close();
  }
}

async function readWhole(file: DiskFile, path: string, maxBytes: number): Promise<Uint8Array> {
  const first = new Uint8Array(Math.min(smallFileFirstReadBytes, maxBytes + 1));
  const got = await file.readAt(first, 0);
  if (got < first.length) return first.subarray(0, got);
  const size = await file.sizeBytes();
  if (size > maxBytes) throw tooLarge(path, size, maxBytes);
  const bytes = new Uint8Array(size);
  const read = await file.readAt(bytes, 0);
  if (read !== size) throw new DiskError("io", "read", `${path} (a short read: ${read} of ${size} bytes)`);
  return bytes;
}

/** The refusal of a file larger than a small file may be. */
export function tooLarge(path: string, sizeBytes: number, maxBytes: number): DiskError {
  return new DiskError(
    "io",
    "read",
    `${path} (${sizeBytes} bytes, more than the ${maxBytes} a small file may hold)`,
  );
}

/**
 * Replaces a small file's contents (creating it if needed) and makes them durable. `options` pass on
 * to the open (`reopenable`: through a bound on open files, waiting for a handle).
 */
export async function writeWholeFile(
  disk: Disk,
  path: string,
  bytes: Uint8Array,
  options: CreateOptions = {},
): Promise<void> {
  const file = await disk.open(path, { ...options, create: true });
  try {
    await file.truncate(0);
    await file.writeAt(bytes, 0);
    await file.sync();
  } finally {
    await file.close();
  }
}

/** How `replaceFileWith` writes the new file before it takes the old one's place. */
export interface ReplaceFileOptions<T> {
  /** Where the new contents are written first; `${path}.tmp` by default. Boot removes leftovers. */
  tempPath?: string;
  /** Makes the directory first, for a file whose directory may not exist yet. */
  makeDirectory?: boolean;
  /** Writes the temporary file around the page cache (`OpenOptions.bypassCache`). */
  bypassCache?: boolean;
  /** Opens the temporary file through a bound on open files, waiting for a handle (`OpenOptions.reopenable`). */
  reopenable?: boolean;
  /** Cuts the temporary file, once written, to the length this gives for what `write` returned. */
  trimTo?: (written: T) => number;
}

/**
 * Replaces the file at `path` atomically: `write` fills a temporary file (created or emptied), which
 * is fsynced, closed, renamed over `path`, and made durable by a directory fsync. A crash leaves the
 * old file or the new one, never a mix; at most a temporary file beside it. Returns what `write`
 * returned. The disk calls are made here, in this order, with nothing between them: the simulator's
 * crash points and I/O order follow them.
 */
export async function replaceFileWith<T>(
  disk: Disk,
  path: string,
  write: (file: DiskFile) => Promise<T>,
  options: ReplaceFileOptions<T> = {},
): Promise<T> {
  const dir = dirOf(path);
  const tempPath = options.tempPath ?? `${path}.tmp`;
  if (options.makeDirectory === true) await disk.mkdirp(dir);
  const file = await disk.open(tempPath, {
    create: true,
    bypassCache: options.bypassCache ?? false,
    reopenable: options.reopenable ?? false,
  });
  let written: T;
  try {
    await file.truncate(0);
    written = await write(file);
    if (options.trimTo !== undefined) await file.truncate(options.trimTo(written));
    await file.sync();
  } finally {
    await file.close();
  }
  await disk.rename(tempPath, path);
  await disk.fsyncDir(dir);
  return written;
}

/** Replaces the file at `path` with `bytes`, atomically (see `replaceFileWith`). */
export function replaceFile(
  disk: Disk,
  path: string,
  bytes: Uint8Array,
  options: { reopenable?: boolean } = {},
): Promise<void> {
  // The write's promise is handed on as it is: no async wrapper adds a promise hop.
  return replaceFileWith(disk, path, (file) => file.writeAt(bytes, 0), options);
}
