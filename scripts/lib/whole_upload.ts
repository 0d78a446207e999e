import { toPieces } from "../../src/objectstore/object_store.ts";
import type { DeadlineObjectStore } from "../../src/objectstore/retrying_object_store.ts";
import { crc32 } from "../../src/runtime/checksum/crc32.ts";
import type { Disk } from "../../src/runtime/disk/disk.ts";
import { readUpTo } from "../../src/runtime/disk/file_ops.ts";

/**
 * The pump benchmark's stand-in for an upload without the server's cooperative controls
 * (docs/BENCHMARKS.md, "What it does"): what the server does to a sealed segment in pieces, each on
 * a turn of the piece gate and under `upload_concurrency`, done here to the same files, on the same
 * loop, disk and store, whole. The server has no way to upload like this; only the benchmark does,
 * to show what the pieces and the gate prevent.
 */

/** One file to upload whole: where it is on disk, and the key it goes to. */
export interface WholeUpload {
  path: string;
  key: string;
}

/**
 * Uploads a file whole: read in one call, its CRC32 computed over all of it in one synchronous
 * stretch, then put with no yield between its pieces. The whole file is in memory until the put
 * ends. Returns its size in bytes.
 */
export async function uploadFileWhole(
  disk: Pick<Disk, "open">,
  store: DeadlineObjectStore,
  upload: WholeUpload,
  deadlineAtMs: number,
): Promise<number> {
  const file = await disk.open(upload.path, { readOnly: true });
  let bytes: Uint8Array;
  try {
    bytes = await readUpTo(file, 0, await file.sizeBytes());
  } finally {
    await file.close();
  }
  const checksum = crc32(bytes);
  await store.put(upload.key, () => wholePieces(bytes), {
    sizeBytes: bytes.length,
    metadata: { crc32: String(checksum) },
    ifAbsent: false,
    crc32: checksum,
    deadlineAtMs,
  });
  return bytes.length;
}

/** Uploads every file whole, all at once (no bound on how many run together). Returns the bytes uploaded. */
export async function uploadAllWhole(
  disk: Pick<Disk, "open">,
  store: DeadlineObjectStore,
  uploads: readonly WholeUpload[],
  deadlineAtMs: number,
): Promise<number> {
  const sizes = await Promise.all(
    uploads.map((upload) => uploadFileWhole(disk, store, upload, deadlineAtMs)),
  );
  return sizes.reduce((total, size) => total + size, 0);
}

/** A put's body over bytes already in memory: their pieces, one after another, with no yield between. */
async function* wholePieces(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield* toPieces(bytes);
}
