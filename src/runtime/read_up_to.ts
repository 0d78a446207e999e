/**
 * Positioned reads that do not stop at a short read: `DiskFile.readAt` may return fewer bytes than
 * asked, so these read again until the buffer is full or the file ends. Each pass reads at least one
 * byte or ends the loop, so a read of `length` bytes takes at most `length` passes.
 */
import type { DiskFile } from "./disk.ts";

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
