import type { Disk } from "./disk.ts";

/** Replaces a small file's contents (creating it if needed) and makes them durable. */
export async function writeWholeFile(disk: Disk, path: string, bytes: Uint8Array): Promise<void> {
  const file = await disk.open(path, { create: true });
  try {
    await file.truncate(0);
    await file.writeAt(bytes, 0);
    await file.sync();
  } finally {
    await file.close();
  }
}
