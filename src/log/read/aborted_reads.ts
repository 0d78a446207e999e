import { type AbortedTxn, AbortedTxnIndex, readAbortedTxnIndexFile } from "../producers/aborted_txns.ts";
import type { BatchHeader } from "../batch/batch_codec.ts";
import type { Segment } from "../segment/segment.ts";
import type { ReadContext } from "./segment_reads.ts";
import { findSegmentIndex } from "./segment_reads.ts";

/**
 * The aborted transactions a read_committed fetch of `[fromOffset, upperBoundOffset)` lists, as
 * Kafka's broker collects them: from the segment holding `fromOffset` on, every abort whose marker
 * is at or past `fromOffset` and whose first offset is below the bound, until a segment holds an
 * abort completed with the last stable offset at or past the bound (no later abort began below
 * it). The active segment's index is in memory; a local sealed one's is read from its `.txnindex`
 * once and kept with it; an evicted one's `.txnindex` (kept beside its `.index`, or its object in the
 * store) is read each time it holds entries, so that memory does not grow with what only the bucket
 * holds.
 */
export async function collectAbortedTxns(
  context: ReadContext,
  chain: readonly Segment[],
  fromOffset: number,
  upperBoundOffset: number,
): Promise<AbortedTxn[]> {
  const segments = [...chain];
  const found: AbortedTxn[] = [];
  // Bounded by the chain's segments.
  for (let i = Math.max(0, findSegmentIndex(segments, fromOffset)); i < segments.length; i++) {
    const segment = segments[i]!;
    let index = segment.abortedTxns;
    if (index === "none") continue;
    if (index === null) {
      index = await sealedAbortedTxns(context, segment);
      // An evicted segment keeps only the knowledge that it holds none.
      if (segment.location !== "remote") segment.abortedTxns = index;
      else if (index.entries.length === 0) segment.abortedTxns = "none";
    }
    if (index.collect(fromOffset, upperBoundOffset, found)) break;
  }
  return found;
}

/**
 * A sealed segment's aborted transactions: from its local `.txnindex`; for a remote segment without
 * one (restored, merged, planted: it never was sealed here), from its object in the store.
 */
async function sealedAbortedTxns(context: ReadContext, segment: Segment): Promise<AbortedTxnIndex> {
  const local = await readAbortedTxnIndexFile(context.disk, segment.txnIndexPath);
  if (local !== null) return local;
  const reader = context.remote.reader;
  if (segment.location === "remote" && reader?.abortedTxns !== undefined) {
    return await reader.abortedTxns(segment);
  }
  return new AbortedTxnIndex();
}

/**
 * Whether a batch is one of the aborted transactions': a transactional batch of an aborted
 * transaction's producer between its first offset and its marker. For a read_committed poll,
 * which leaves their records out.
 */
export function abortedBatchTest(aborted: readonly AbortedTxn[]): (header: BatchHeader) => boolean {
  const byProducer = new Map<number, AbortedTxn[]>();
  for (const txn of aborted) {
    const list = byProducer.get(txn.producerId);
    if (list === undefined) byProducer.set(txn.producerId, [txn]);
    else list.push(txn);
  }
  return (header) => {
    if (!header.transactional || header.control) return false;
    const list = byProducer.get(header.producerId);
    // Bounded by the aborts the read collected.
    return list !== undefined &&
      list.some((t) => header.baseOffset >= t.firstOffset && header.baseOffset <= t.lastOffset);
  };
}
