import type { EpochStart } from "../../log/partition/leader_epochs.ts";
import type { ObjectStore } from "../../objectstore/object_store.ts";
import { concatBytes } from "../../runtime/memory/buffers.ts";
import { StateTransferError, type TieredObject } from "./transfer_chain.ts";

/** Bytes of a record batch's header up to and including its magic byte. */
const batchHeaderPrefixBytes = 17;

/**
 * Where each leader epoch of a chain of tiered objects begins, oldest first, read from the bucket
 * (a state transfer's and a restore's). Each segment holds batches of one leader epoch (the log
 * rolls before a new epoch's first batch), and epochs only rise along the log, so a bisection over
 * the segments finds where they change with a few 17-byte reads of their first batches. Segments of
 * no epoch (a single node's) are passed over.
 */
export async function readChainEpochs(
  store: Pick<ObjectStore, "getRange">,
  chain: readonly TieredObject[],
): Promise<EpochStart[]> {
  if (chain.length === 0) return [];
  const known = new Map<number, number>();
  const epochAt = async (i: number): Promise<number> => {
    const cached = known.get(i);
    if (cached !== undefined) return cached;
    const epoch = await firstBatchEpoch(store, chain[i]!);
    known.set(i, epoch);
    return epoch;
  };
  const starts: EpochStart[] = [{ epoch: await epochAt(0), startOffset: chain[0]!.startOffset }];
  // The epochs at `lo` and `hi` are read; pushes where they change between, in order.
  const between = async (lo: number, hi: number): Promise<void> => {
    const [low, high] = [await epochAt(lo), await epochAt(hi)];
    // A single node stamps no epoch: its batches keep what their producers sent (-1, or a client's
    // 0), in any order. A segment of no epoch (a negative one) starts none and is never out of order.
    if (low === high || high < 0) return;
    if (low > high) {
      throw new StateTransferError(
        `segment ${chain[hi]!.startOffset} is of leader epoch ${high}, below ${low} before it`,
      );
    }
    if (hi === lo + 1) {
      // Epochs met again past a segment of none start nothing new.
      if (high > starts.at(-1)!.epoch) starts.push({ epoch: high, startOffset: chain[hi]!.startOffset });
      return;
    }
    const mid = Math.floor((lo + hi) / 2);
    await between(lo, mid);
    await between(mid, hi);
  };
  await between(0, chain.length - 1);
  return starts.filter((s) => s.epoch >= 0);
}

/** The partition leader epoch of a segment's first batch: 17 bytes of its object. */
async function firstBatchEpoch(store: Pick<ObjectStore, "getRange">, o: TieredObject): Promise<number> {
  const bytes = concatBytes(await store.getRange(o.key, 0, batchHeaderPrefixBytes));
  if (bytes.length !== batchHeaderPrefixBytes || bytes[16] !== 2) {
    throw new StateTransferError(`object ${o.key} does not begin with a record batch of magic 2`);
  }
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getInt32(12, false);
}
