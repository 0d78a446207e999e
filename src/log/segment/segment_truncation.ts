import { assert } from "../../runtime/assert.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import { unlinkIfPresent } from "../../runtime/disk/file_ops.ts";
import { AbortedTxnIndex, readAbortedTxnIndexFile } from "../producers/aborted_txns.ts";
import { scanBatches } from "../read/scan_batches.ts";
import type { Segment } from "./segment.ts";
import { closeFiles, type SegmentChain } from "./segment_chain.ts";

/**
 * Cuts the log at `offset`, inside the writer loop: a follower drops the tail where its log
 * diverged from its new leader's. The segments that start past `offset` are deleted (newest
 * first); the one holding it is cut at the batch that starts there and becomes the active segment
 * again (a sealed one loses its `.index`, as an active segment's lives in memory). Only local
 * segments are cut: tiered ones never hold records above a high watermark.
 */
export async function truncateSegments(
  disk: Disk,
  dir: string,
  chain: SegmentChain,
  offset: number,
): Promise<void> {
  const segments = chain.segments;
  assert(
    offset >= segments[0]!.startOffset,
    `Cannot truncate to ${offset}: the log starts at ${segments[0]!.startOffset}`,
  );
  assert(
    offset <= chain.pendingNextOffset,
    `Cannot truncate to ${offset}: the log ends at ${chain.pendingNextOffset}`,
  );
  if (offset === chain.pendingNextOffset) return;
  await chain.backgroundSync;
  let keep = segments.length - 1;
  while (keep > 0 && segments[keep]!.startOffset > offset) keep--;
  const kept = segments[keep]!;
  for (const segment of segments.slice(keep)) {
    assert(segment.location === "local", `Cannot truncate into ${segment.stem}: it is in the object store`);
  }
  const { positionBytes, maxTimestampUs } = await cutPoint(disk, kept, offset);
  // Snapshots taken past the kept segment's start hold batches about to go: deleted first.
  await chain.producerSnapshots.deleteAfter(kept.startOffset);
  // Newest first, so that a crash part-way leaves a chain that still starts where it did.
  for (const doomed of segments.slice(keep + 1).reverse()) {
    await closeFiles(doomed);
    await disk.unlink(doomed.logPath);
    await unlinkIfPresent(disk, doomed.indexPath);
    if (doomed.mayHaveTxnIndexFile) await unlinkIfPresent(disk, doomed.txnIndexPath);
  }
  // The kept segment is active again: its aborted transactions in memory, cut where the log is, and
  // no file (a boot rebuilds an active segment's from its batches; a seal writes it again).
  const mayHaveFile = kept.mayHaveTxnIndexFile;
  const aborted = kept.abortedTxns === "none"
    ? new AbortedTxnIndex()
    : kept.abortedTxns ?? await readAbortedTxnIndexFile(disk, kept.txnIndexPath) ?? new AbortedTxnIndex();
  aborted.truncateFrom(offset);
  kept.abortedTxns = aborted;
  if (mayHaveFile) await unlinkIfPresent(disk, kept.txnIndexPath);
  if (kept.sealed) {
    await unlinkIfPresent(disk, kept.indexPath);
    kept.sealed = false;
  }
  kept.logFile ??= await disk.open(kept.logPath, { reopenable: true });
  await kept.logFile.truncate(positionBytes);
  await kept.logFile.sync();
  await disk.fsyncDir(dir);
  kept.localIndex.truncateFrom(offset - kept.startOffset);
  kept.endOffset = offset - 1;
  kept.sizeBytes = positionBytes;
  kept.visibleSizeBytes = positionBytes;
  kept.visibleEndOffset = offset - 1;
  kept.maxTimestampUs = maxTimestampUs;
  if (kept.isEmpty) kept.firstTimestampUs = null;
  kept.lastIndexedPosition = kept.localIndex.last?.position ?? -1;
  chain.cutTo(keep, offset);
  chain.epochs.truncateFrom(offset);
  await chain.epochs.persist();
}

/** Where in `segment` the batch at `offset` starts, and the largest timestamp before it. */
async function cutPoint(
  disk: Disk,
  segment: Segment,
  offset: number,
): Promise<{ positionBytes: number; maxTimestampUs: number }> {
  if (offset === segment.startOffset) return { positionBytes: 0, maxTimestampUs: 0 };
  const entry = segment.localIndex.floorByOffset(offset - segment.startOffset);
  const file = segment.logFile ?? await disk.open(segment.logPath, { readOnly: true });
  let positionBytes = -1;
  let maxTimestampUs = entry.timestampUs;
  try {
    const end = await scanBatches(
      file,
      entry.position,
      segment.sizeBytes,
      { verify: false },
      (_batch, header, at) => {
        if (header.baseOffset >= offset) {
          positionBytes = header.baseOffset === offset ? at : -1;
          return false;
        }
        maxTimestampUs = Math.max(maxTimestampUs, header.maxTimestampUs);
        return true;
      },
    );
    if (positionBytes < 0 && end.kind === "end" && offset === segment.endOffset + 1) {
      positionBytes = end.position;
    }
  } finally {
    if (file !== segment.logFile) await file.close();
  }
  assert(positionBytes >= 0, `Cannot truncate ${segment.stem} to ${offset}: no batch starts there`);
  return { positionBytes, maxTimestampUs };
}
