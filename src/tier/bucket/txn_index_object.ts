import { NotFoundError } from "../../objectstore/object_store_errors.ts";
import { AbortedTxnIndex, AbortedTxnIndexError } from "../../log/producers/aborted_txns.ts";
import { concatBytes } from "../../runtime/memory/buffers.ts";
import type { SnapshotObjectStore } from "./producer_snapshot_object.ts";

/**
 * Largest aborted-transaction index object read: half a million aborts in one segment; anything
 * larger is not one this server wrote.
 */
export const txnIndexObjectBytesMax = 16 * 1024 * 1024;

/**
 * A segment's aborted-transaction index object `key` (a HEAD, then one ranged GET): empty when the
 * segment has none (it went up without aborts, or was deleted meanwhile). Throws
 * AbortedTxnIndexError for one that is too large or not an index, and the store's failures.
 */
export async function readTxnIndexObject(store: SnapshotObjectStore, key: string): Promise<AbortedTxnIndex> {
  const head = await store.head(key);
  if (head === null) return new AbortedTxnIndex();
  if (head.sizeBytes > txnIndexObjectBytesMax) {
    throw new AbortedTxnIndexError(
      `Cannot read ${key}: ${head.sizeBytes} bytes, more than ${txnIndexObjectBytesMax}`,
    );
  }
  try {
    return AbortedTxnIndex.decode(concatBytes(await store.getRange(key, 0, head.sizeBytes)), key);
  } catch (error) {
    // Deleted since the HEAD: with its segment, by retention or a merge's cleanup.
    if (error instanceof NotFoundError) return new AbortedTxnIndex();
    throw error;
  }
}
