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

/** Reads a `.log` object's HEAD into what its marker needs; metadata missing or inconsistent throws. */
export function tieredObjectOf(key: string, startOffset: number, head: ObjectHead | null): TieredObject {
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
  };
  if (object.startOffset !== startOffset || object.endOffset < startOffset) {
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
 * each one that ends just below the next, to the first gap. `objects` are sorted by start offset.
 * Objects at or above the floor (uploads not committed, orphans) are not part of it. With no
 * object ending at `floor - 1`, the floor is not backed by the bucket, and the transfer refuses.
 */
export function chainBelowFloor(objects: readonly TieredObject[], floor: number): TieredObject[] {
  const below = objects.filter((o) => o.endOffset < floor);
  const chain: TieredObject[] = [];
  let next = floor;
  for (let i = below.length - 1; i >= 0; i--) {
    const o = below[i]!;
    if (o.endOffset !== next - 1) break;
    chain.push(o);
    next = o.startOffset;
  }
  if (chain.length === 0) {
    throw new StateTransferError(`no object ends just below the committed floor ${floor}`);
  }
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
