import type { CreateOptions, Disk } from "./disk.ts";

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
