import type { ObjectHead } from "../../objectstore/object_store.ts";
import { NotFoundError } from "../../objectstore/object_store_errors.ts";
import { concatBytes } from "../../runtime/memory/buffers.ts";
import { CorruptRecordError } from "../../runtime/disk/record_file.ts";
import { segmentKeysOfLog } from "./object_keys.ts";
import { decodeProducerSnapshot, type ProducerSnapshot } from "../../log/producers/producer_snapshots.ts";

/**
 * Largest producer snapshot object read: `producersPerPartitionMax` producers, each with its last
 * five batches, take a few MiB; anything larger is not one this server wrote.
 */
export const producerSnapshotObjectBytesMax = 16 * 1024 * 1024;

/** What reading a snapshot object needs of the store: each call under the store's own deadlines. */
export interface SnapshotObjectStore {
  head(key: string): Promise<ObjectHead | null>;
  getRange(key: string, start: number, endExclusive: number): Promise<Uint8Array[]>;
}

/** A segment's producer snapshot as the bucket holds it, or why none can be used. */
export type ProducerSnapshotObject =
  | { kind: "snapshot"; snapshot: ProducerSnapshot }
  /** The segment went up without one (sealed before its partition wrote snapshots, or let go). */
  | { kind: "absent" }
  | { kind: "unusable"; reason: string };

/**
 * Reads the producer snapshot object `key` of the segment that ends just below `offset` (a HEAD, then
 * one ranged GET): the producers' state there, checked whole (its record's checksum) and taken at
 * that offset. The store's failures are thrown; a snapshot that is not usable is reported, so that the
 * caller goes on without it, as for a segment that has none.
 */
export async function readProducerSnapshotObject(
  store: SnapshotObjectStore,
  key: string,
  offset: number,
): Promise<ProducerSnapshotObject> {
  const head = await store.head(key);
  if (head === null) return { kind: "absent" };
  if (head.sizeBytes > producerSnapshotObjectBytesMax) {
    return {
      kind: "unusable",
      reason: `${key} is ${head.sizeBytes} bytes, more than ${producerSnapshotObjectBytesMax}`,
    };
  }
  let bytes: Uint8Array;
  try {
    bytes = concatBytes(await store.getRange(key, 0, head.sizeBytes));
  } catch (error) {
    // Deleted since the HEAD: with its segment, by retention or a merge's cleanup.
    if (error instanceof NotFoundError) return { kind: "absent" };
    throw error;
  }
  try {
    const snapshot = decodeProducerSnapshot(bytes, key);
    if (snapshot.offset !== offset) {
      return { kind: "unusable", reason: `${key} was taken at ${snapshot.offset}, not ${offset}` };
    }
    return { kind: "snapshot", snapshot };
  } catch (error) {
    if (!(error instanceof CorruptRecordError)) throw error;
    return { kind: "unusable", reason: error.message };
  }
}

/**
 * The producers' state where a chain of segments ends, from the producer snapshot object of its last
 * segment (the `.log` object `lastLogKey`, ending at `endOffset`): what a partition seeded from the
 * chain starts with. Null when the segment has none; `onUnusable` hears why one is not usable.
 */
export async function producersAtEndOf(
  store: SnapshotObjectStore,
  lastLogKey: string,
  endOffset: number,
  onUnusable: (reason: string) => void,
): Promise<ProducerSnapshot | null> {
  const found = await readProducerSnapshotObject(
    store,
    segmentKeysOfLog(lastLogKey).producers,
    endOffset + 1,
  );
  if (found.kind === "unusable") onUnusable(found.reason);
  return found.kind === "snapshot" ? found.snapshot : null;
}
