import type { ObjectHead } from "../../objectstore/object_store.ts";
import type { RemoteMarker } from "../../log/remote/remote_marker.ts";
import { segmentFormatVersion } from "../upload/segment_uploader.ts";

/** A tiered segment as its `.log` object's metadata describes it: a marker's fields, less the incarnation. */
export type TieredObject = Omit<RemoteMarker, "createdRevision" | "purgeGeneration"> & { key: string };

/** A state transfer that cannot go ahead: the bucket does not hold what the floor says it does. */
export class StateTransferError extends Error {
  override name = "StateTransferError";
  constructor(reason: string, options?: ErrorOptions) {
    super(`Cannot transfer the partition's state from the bucket: ${reason}`, options);
  }
}

/** Where a listed `.log` object's key says it starts, and for a merged segment's key, ends. */
export interface ListedStem {
  startOffset: number;
  /** Null for a key of the start offset alone. */
  mergedEndOffset: number | null;
}

/**
 * Reads a `.log` object's HEAD into what its marker needs; metadata missing or inconsistent with
 * the key throws.
 */
export function tieredObjectOf(key: string, stem: ListedStem, head: ObjectHead | null): TieredObject {
  if (head === null) throw new StateTransferError(`object ${key} was listed but is gone`);
  const m = head.metadata;
  if (m["format-version"] !== segmentFormatVersion) {
    throw new StateTransferError(`object ${key} has format version ${m["format-version"]}`);
  }
  const field = (name: string): number => {
    const value = Number(m[name]);
    if (m[name] === undefined || !Number.isSafeInteger(value) || value < 0) {
      throw new StateTransferError(`object ${key} lacks a whole ${name} in its metadata`);
    }
    return value;
  };
  const object: TieredObject = {
    key,
    startOffset: field("start-offset"),
    endOffset: field("end-offset"),
    sizeBytes: field("size"),
    indexSizeBytes: field("index-size"),
    startTimestampUs: field("start-timestamp"),
    endTimestampUs: field("end-timestamp"),
    maxTimestampUs: field("max-timestamp"),
    logCrc32: field("crc32"),
    merged: stem.mergedEndOffset !== null,
  };
  const { startOffset, mergedEndOffset } = stem;
  if (
    object.startOffset !== startOffset || object.endOffset < startOffset ||
    (mergedEndOffset !== null && object.endOffset !== mergedEndOffset)
  ) {
    throw new StateTransferError(
      `object ${key} says it holds offsets ${object.startOffset} to ${object.endOffset}`,
    );
  }
  if (object.sizeBytes !== head.sizeBytes) {
    throw new StateTransferError(
      `object ${key} is ${head.sizeBytes} bytes, its metadata says ${object.sizeBytes}`,
    );
  }
  return object;
}

/**
 * The tiered chain a floor stands on: from the object that ends just below `floor` back through
 * each one that ends just below the next, to the first gap. Objects at or above the floor (uploads
 * not committed, orphans) are not part of it. With no object ending at `floor - 1`, the floor is
 * not backed by the bucket, and the transfer refuses.
 */
export function chainBelowFloor(objects: readonly TieredObject[], floor: number): TieredObject[] {
  const chain = chainEndingAt(objects.filter((o) => o.endOffset < floor), floor - 1);
  if (chain.length === 0) {
    throw new StateTransferError(`no object ends just below the committed floor ${floor}`);
  }
  return chain;
}

/**
 * The gapless chain of `objects` that ends at offset `end`, oldest first: back from the object that
 * ends there through each one that ends just below the next, to the first gap. Where a merge's
 * object and the last of the segments it replaced both end at an offset (the replaced ones stay
 * in the bucket until a grace after the merge), the one that reaches further back is taken: the
 * merged object, whose bytes are the replaced ones' (docs/DESIGN.md, "The adjacent-segment merger").
 */
export function chainEndingAt<T extends { startOffset: number; endOffset: number }>(
  objects: readonly T[],
  end: number,
): T[] {
  const byEnd = new Map<number, T>();
  for (const o of objects) {
    const other = byEnd.get(o.endOffset);
    if (other === undefined || o.startOffset < other.startOffset) byEnd.set(o.endOffset, o);
  }
  const chain: T[] = [];
  // Each step moves `next` below the object it took: bounded by the objects.
  for (let o = byEnd.get(end); o !== undefined; o = byEnd.get(o.startOffset - 1)) chain.push(o);
  return chain.reverse();
}

/** The marker a replica plants for a tiered segment of its incarnation. */
export function markerOfObject(
  o: TieredObject,
  identity: { createdRevision: string; purgeGeneration: number },
): RemoteMarker {
  const { key: _key, ...fields } = o;
  return { ...fields, ...identity };
}
