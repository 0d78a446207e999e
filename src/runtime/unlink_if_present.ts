import { type Disk, DiskError } from "./disk.ts";

/** Unlinks `path`; a file already gone is not an error (any other failure is). */
export async function unlinkIfPresent(disk: Disk, path: string): Promise<void> {
  try {
    await disk.unlink(path);
  } catch (error) {
    if (!(error instanceof DiskError && error.code === "not_found")) throw error;
  }
}
