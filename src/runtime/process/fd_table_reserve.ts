import { assert } from "../assert.ts";
import type { Disk, DiskFile } from "../disk/disk.ts";

/** The largest reserve configuration accepts: Linux's default ceiling on descriptors (`nr_open`). */
export const fdTableReserveMax = 1024 * 1024;

/** What `growFdTable` did: the descriptors it held at once, and why it stopped short if it did. */
export interface FdTableGrowth {
  readonly heldMax: number;
  readonly error: string | null;
}

/**
 * Grows the process's descriptor table at start-up by holding `descriptors` descriptors of one file
 * at once, then closing them all.
 *
 * Why: Linux keeps a process's descriptors in a table it doubles (64, 128, 256, ...) when a new
 * descriptor's number does not fit, and in a multi-threaded process each doubling waits for an RCU
 * grace period inside the `open` that needed it. The event loop opens files itself (chunk files,
 * segment files), and on two busy cores that wait blocked it 9.5 to 20 ms at the start of the
 * benchmark's storm, when its descriptors passed 256 (docs/TUNING.md, "fd_table_reserve"). The
 * table never shrinks, so growing it once before serving moves those waits to start-up.
 *
 * Running out of descriptors (the process's limit below the reserve) is not fatal: the table grew as
 * far as it could, and the caller reports it.
 */
export async function growFdTable(disk: Disk, path: string, descriptors: number): Promise<FdTableGrowth> {
  assert(
    Number.isSafeInteger(descriptors) && descriptors >= 0 && descriptors <= fdTableReserveMax,
    `Cannot grow the descriptor table: ${descriptors} is not between 0 and ${fdTableReserveMax}`,
  );
  if (descriptors === 0) return { heldMax: 0, error: null };
  const held: DiskFile[] = [];
  let error: string | null = null;
  try {
    while (held.length < descriptors) held.push(await disk.open(path, { create: held.length === 0 }));
  } catch (cause) {
    error = cause instanceof Error ? cause.message : String(cause);
  } finally {
    // Closed one at a time: a descriptor left open would hold the file for the process's life.
    // A close that fails has nothing to retry; the growth already happened or is reported in `error`.
    for (const file of held) await file.close().catch(() => {});
  }
  // A leftover scratch file costs nothing; the next start-up opens it again.
  await disk.unlink(path).catch(() => {});
  return { heldMax: held.length, error };
}
