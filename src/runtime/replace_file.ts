import type { Disk, DiskFile } from "./disk.ts";
import { dirOf } from "./paths.ts";

/** How `replaceFileWith` writes the new file before it takes the old one's place. */
export interface ReplaceFileOptions<T> {
  /** Where the new contents are written first; `${path}.tmp` by default. Boot removes leftovers. */
  tempPath?: string;
  /** Makes the directory first, for a file whose directory may not exist yet. */
  makeDirectory?: boolean;
  /** Writes the temporary file around the page cache (`OpenOptions.bypassCache`). */
  bypassCache?: boolean;
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
  const file = await disk.open(tempPath, { create: true, bypassCache: options.bypassCache ?? false });
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
export function replaceFile(disk: Disk, path: string, bytes: Uint8Array): Promise<void> {
  // The write's promise is handed on as it is: no async wrapper adds a promise hop.
  return replaceFileWith(disk, path, (file) => file.writeAt(bytes, 0));
}
