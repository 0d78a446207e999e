import { type Disk, DiskError, type DiskFile } from "./disk.ts";

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
