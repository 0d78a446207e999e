import {
  AbortedTxnIndex,
  readAbortedTxnIndexFile,
  writeAbortedTxnIndexFile,
} from "../../log/producers/aborted_txns.ts";
import { readTxnIndexObject } from "../bucket/txn_index_object.ts";
import { assert } from "../../runtime/assert.ts";
import { Crc32Stream } from "../../runtime/checksum/crc32.ts";
import type { Disk, DiskFile } from "../../runtime/disk/disk.ts";
import { unlinkIfPresent } from "../../runtime/disk/file_ops.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { Partition } from "../../log/partition/partition.ts";
import type { RemoteMarker } from "../../log/remote/remote_marker.ts";
import { scanBatches } from "../../log/read/scan_batches.ts";
import { objectStem, type Segment } from "../../log/segment/segment.ts";
import { SparseIndex, writeIndexFile } from "../../log/segment/sparse_index.ts";
import type { ReplaceRemoteSegments } from "../../log/segment/segment_replacement.ts";
import { NotFoundError } from "../../objectstore/object_store_errors.ts";
import type { DeadlineObjectStore } from "../../objectstore/retrying_object_store.ts";
import { type PartitionIncarnation, segmentKeys } from "../bucket/object_keys.ts";
import { type UploadDeps, uploadSegment } from "../upload/segment_uploader.ts";
import { readProducerSnapshotObject } from "../bucket/producer_snapshot_object.ts";
import { writeProducerSnapshot } from "../../log/producers/producer_snapshots.ts";
import { type MergeRun, planMerge } from "./merge_plan.ts";

/** Segments one merge joins at most: each costs a GET. */
export const mergeSegmentsMax = 256;
/**
 * Store requests a merge makes beyond one GET per segment: the last one's producer snapshot (a HEAD
 * and a GET), three PUTs, and a HEAD after each refused.
 */
const mergeRequestsBeyondGets = 8;

export interface MergerDeps {
  disk: Disk;
  store: DeadlineObjectStore;
  /** How the merged object goes up: the uploads' pacing, create-if-absent, the same checks. */
  upload: UploadDeps;
  logger: Logger;
  /** Commits the replace through the shard's control log; resolves once it is applied. */
  submitReplace(command: ReplaceRemoteSegments): Promise<void>;
  /** A whole merge's deadline, from its start (`segment_upload_timeout` times four, as an upload's). */
  mergeTimeoutMs: number;
  clock: { nowMs(): number };
}

/** What a partition's merge did. */
export type MergeOutcome =
  | { kind: "merged"; segments: number; sizeBytes: number }
  /** Nothing to merge in the partition, or not within the requests left. */
  | { kind: "none" }
  /** The store's objects are not what the markers say: reported, nothing replaced. */
  | { kind: "anomaly"; detail: string };

/** The partition's segments a merge works on, with what the merged segment's objects are. */
interface MergeWork {
  partition: Partition;
  label: string;
  incarnation: PartitionIncarnation;
  segments: Segment[];
  startOffset: number;
  endOffset: number;
  sizeBytes: number;
  logPath: string;
  indexPath: string;
  /** The last segment's producer snapshot, staged in the partition's directory as this file. */
  producersName: string;
  producersPath: string;
  /** Every segment's aborted transactions, staged as one index here when there are any. */
  txnIndexPath: string;
}

/**
 * Merges the partition's first run of small remote segments (`planMerge`) into one object of its
 * topic's `segment_size` at most (docs/DESIGN.md, "The adjacent-segment merger"), within the
 * `requestsLeft` store requests: their objects are read into a staging file in the partition's
 * directory (a `.tmp`, which boot removes), one piece at a time; the staged log is scanned with its
 * checksums and offsets checked, which builds its index; both go up under the merged segment's keys
 * (its start and end offsets, create-if-absent, so a merge done again writes the same objects);
 * then the replace is committed. A crash at any step leaves the old chain, or the new one.
 */
export async function mergePartition(
  deps: MergerDeps,
  partition: Partition,
  incarnation: PartitionIncarnation,
  limits: { targetBytes: number; indexIntervalBytes: number; requestsLeft: number },
): Promise<MergeOutcome> {
  const segmentsMax = Math.min(mergeSegmentsMax, limits.requestsLeft - mergeRequestsBeyondGets);
  if (segmentsMax < 2) return { kind: "none" };
  const run = planOf(partition, limits.targetBytes, segmentsMax);
  if (run === null) return { kind: "none" };
  const segments = partition.log.segments.slice(run.first, run.first + run.count);
  const startOffset = segments[0]!.startOffset;
  const endOffset = segments.at(-1)!.endOffset;
  const staging = `${partition.dir}/${objectStem(startOffset, endOffset)}`;
  const work: MergeWork = {
    partition,
    label: partition.log.label,
    incarnation,
    segments,
    startOffset,
    endOffset,
    sizeBytes: run.sizeBytes,
    logPath: `${staging}.log.merge.tmp`,
    indexPath: `${staging}.index.merge.tmp`,
    producersName: `${objectStem(startOffset, endOffset)}.producers.merge.tmp`,
    producersPath: `${staging}.producers.merge.tmp`,
    txnIndexPath: `${staging}.txnindex.merge.tmp`,
  };
  try {
    return await mergeStaged(deps, work, limits.indexIntervalBytes);
  } finally {
    await unlinkIfPresent(deps.disk, work.logPath);
    await unlinkIfPresent(deps.disk, work.indexPath);
    await unlinkIfPresent(deps.disk, work.producersPath);
    await unlinkIfPresent(deps.disk, work.txnIndexPath);
  }
}

function planOf(partition: Partition, targetBytes: number, segmentsMax: number): MergeRun | null {
  const sb = partition.superblock;
  const chain = partition.log.segments.map((s) => ({
    startOffset: s.startOffset,
    endOffset: s.endOffset,
    sizeBytes: s.sizeBytes,
    remote: s.location === "remote",
  }));
  return planMerge(chain, {
    floor: sb.tieredUpToOffset,
    deletedUpToOffset: sb.deletedUpToOffset,
    ownFromOffset: sb.restoredFrom?.belowOffset ?? 0,
    targetBytes,
    segmentsMax,
    epochStartOffsets: new Set(partition.log.leaderEpochs.starts().map((e) => e.startOffset)),
  });
}

async function mergeStaged(
  deps: MergerDeps,
  work: MergeWork,
  indexIntervalBytes: number,
): Promise<MergeOutcome> {
  const deadlineAtMs = deps.clock.nowMs() + deps.mergeTimeoutMs;
  const log = await deps.disk.open(work.logPath, { create: true });
  let index: StagedIndex | string;
  try {
    await log.truncate(0);
    const fetched = await fetchSegments(deps, work, log, deadlineAtMs);
    if (fetched !== null) return fetched;
    await log.sync();
    index = await indexStaged(work, log, indexIntervalBytes);
  } finally {
    await log.close();
  }
  if (typeof index === "string") return { kind: "anomaly", detail: index };
  await writeIndexFile(deps.disk, work.indexPath, index.index);
  await stageProducers(deps, work);
  await stageTxnIndex(deps, work);
  const keys = segmentKeys(work.incarnation, work.startOffset, work.endOffset);
  const first = work.segments[0]!;
  const last = work.segments.at(-1)!;
  const sealed = {
    logPath: work.logPath,
    indexPath: work.indexPath,
    producersPath: work.producersPath,
    txnIndexPath: work.txnIndexPath,
    startOffset: work.startOffset,
    endOffset: work.endOffset,
    startTimestampUs: first.marker!.startTimestampUs,
    endTimestampUs: last.marker!.endTimestampUs,
    maxTimestampUs: index.maxTimestampUs,
  };
  const uploaded = await uploadSegment(deps.upload, sealed, keys, deadlineAtMs);
  if (uploaded.kind === "anomaly") return uploaded;
  const sb = work.partition.superblock;
  const marker: RemoteMarker = {
    startOffset: work.startOffset,
    endOffset: work.endOffset,
    startTimestampUs: sealed.startTimestampUs,
    endTimestampUs: sealed.endTimestampUs,
    maxTimestampUs: sealed.maxTimestampUs,
    sizeBytes: uploaded.sizeBytes,
    indexSizeBytes: uploaded.indexSizeBytes,
    createdRevision: sb.createdRevision,
    purgeGeneration: sb.purgeGeneration,
    logCrc32: uploaded.logCrc32,
    merged: true,
  };
  await deps.submitReplace({
    kind: "replace_remote_segments",
    partition: work.label,
    purgeGeneration: sb.purgeGeneration,
    markers: [marker],
  });
  return { kind: "merged", segments: work.segments.length, sizeBytes: uploaded.sizeBytes };
}

/**
 * Stages the last merged segment's producer snapshot, the state at the merged segment's end, to go
 * up with it; a merge of segments whose last went without one (or with one not usable, which is
 * logged) goes without one too.
 */
async function stageProducers(deps: MergerDeps, work: MergeWork): Promise<void> {
  const last = work.segments.at(-1)!;
  const key = segmentKeys(work.incarnation, last.startOffset, last.mergedEndOffset).producers;
  const found = await readProducerSnapshotObject(deps.store, key, work.endOffset + 1);
  if (found.kind === "unusable") {
    deps.logger.warn(
      "merge: the last segment's producer snapshot is not usable; the merged one goes without",
      {
        partition: work.label,
        reason: found.reason,
      },
    );
  }
  if (found.kind !== "snapshot") return;
  await writeProducerSnapshot(deps.disk, work.partition.dir, found.snapshot, work.producersName);
}

/**
 * Stages the merged segments' aborted transactions as one index, in marker order (each segment's
 * from its local `.txnindex`, else from its object): the merged segment goes up with it, so that a
 * read_committed fetch of its range still lists them. Segments without aborts add none.
 */
async function stageTxnIndex(deps: MergerDeps, work: MergeWork): Promise<void> {
  const merged = new AbortedTxnIndex();
  for (const segment of work.segments) {
    const held = segment.abortedTxns;
    if (held === "none") continue;
    const index = held ?? await readAbortedTxnIndexFile(deps.disk, segment.txnIndexPath) ??
      await readTxnIndexObject(
        deps.store,
        segmentKeys(work.incarnation, segment.startOffset, segment.mergedEndOffset).txnindex,
      );
    for (const entry of index.entries) merged.add(entry);
  }
  if (merged.entries.length > 0) await writeAbortedTxnIndexFile(deps.disk, work.txnIndexPath, merged);
}

/**
 * Reads each segment's `.log` object into the staging file after the one before, a piece at a time,
 * and checks each against its marker's size and CRC32; null once all are staged. A segment whose
 * object is gone (retention deleted it meanwhile) ends the merge with nothing to do.
 */
async function fetchSegments(
  deps: MergerDeps,
  work: MergeWork,
  log: DiskFile,
  deadlineAtMs: number,
): Promise<MergeOutcome | null> {
  let base = 0;
  for (const segment of work.segments) {
    const marker = segment.marker;
    assert(marker !== null, `Cannot merge segment ${segment.startOffset}: it has no marker`);
    const key = segmentKeys(work.incarnation, segment.startOffset, segment.mergedEndOffset).log;
    let crc = new Crc32Stream();
    let received: number;
    try {
      received = await deps.store.streamRange(key, 0, marker.sizeBytes, async (piece, position) => {
        // A retried attempt streams the object again from its start.
        if (position === 0) crc = new Crc32Stream();
        crc.update(piece);
        await log.writeAt(piece, base + position);
      }, { deadlineAtMs });
    } catch (error) {
      if (error instanceof NotFoundError) return { kind: "none" };
      throw error;
    }
    if (received !== marker.sizeBytes || crc.digest() !== marker.logCrc32) {
      return {
        kind: "anomaly",
        detail: `object ${key} holds ${received} bytes of CRC32 ${crc.digest()}, its marker says ` +
          `${marker.sizeBytes} and ${marker.logCrc32}`,
      };
    }
    base += marker.sizeBytes;
  }
  assert(base === work.sizeBytes, "the staged log is the merged segments' bytes");
  return null;
}

interface StagedIndex {
  index: SparseIndex;
  maxTimestampUs: number;
}

/**
 * Scans the staged log with every batch's CRC32C checked and its offsets following the one before,
 * from the first segment's start to the last one's end, and builds its sparse index (an entry per
 * `indexIntervalBytes`, as a segment's own); a reason string when the bytes are not that.
 */
async function indexStaged(
  work: MergeWork,
  log: DiskFile,
  indexIntervalBytes: number,
): Promise<StagedIndex | string> {
  const index = new SparseIndex();
  let next = work.startOffset;
  let maxTimestampUs = 0;
  let lastIndexed = -1;
  let broken: string | null = null;
  const end = await scanBatches(log, 0, work.sizeBytes, { verify: true }, (_batch, header, position) => {
    if (header.baseOffset !== next) {
      broken = `the batch at byte ${position} starts at offset ${header.baseOffset}, not ${next}`;
      return false;
    }
    maxTimestampUs = Math.max(maxTimestampUs, header.maxTimestampUs);
    if (lastIndexed < 0 || position - lastIndexed >= indexIntervalBytes) {
      index.add({ relativeOffset: next - work.startOffset, position, timestampUs: maxTimestampUs });
      lastIndexed = position;
    }
    next = header.baseOffset + header.lastOffsetDelta + 1;
    return true;
  });
  if (broken !== null) return `the merge of ${work.label} ${work.startOffset}..${work.endOffset}: ${broken}`;
  if (end.kind !== "end" || next !== work.endOffset + 1) {
    return `the merge of ${work.label} ${work.startOffset}..${work.endOffset}: the staged log is ${end.kind} ` +
      `at byte ${end.position}, its batches end at offset ${next - 1}`;
  }
  return { index, maxTimestampUs };
}
