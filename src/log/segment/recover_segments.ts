import { type AbortedTxn, AbortedTxnIndex } from "../producers/aborted_txns.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import type { Logger } from "../../runtime/logger.ts";
import { readUpTo } from "../../runtime/disk/file_ops.ts";
import {
  type BatchHeader,
  batchHeaderBytes,
  decodeBatchHeader,
  isPlausibleHeader,
} from "../batch/batch_codec.ts";
import { PartitionRefusedError } from "../log_errors.ts";
import { scanBatches } from "../read/scan_batches.ts";
import { Segment, segmentStem } from "./segment.ts";
import { readIndexFile, SparseIndex, writeIndexFile } from "./sparse_index.ts";
import { emptyMarker, type MarkerIdentity, type RemoteMarker } from "../remote/remote_marker.ts";
import { type RemoteTable, remoteTableName, type RemoteTableReplay } from "../remote/remote_table.ts";
import { openRemoteTable } from "../remote/remote_table_open.ts";
import { batchField, readRecordBatchHeader } from "../batch/record_batch.ts";
import { ProducerSnapshots, type RecoveredProducers } from "../producers/producer_snapshots.ts";
import { ProducerStates } from "../producers/producer_states.ts";

export interface RecoveryReport {
  segments: Segment[];
  /** Bytes cut from a torn or checksum-failing tail of the active segment. */
  truncatedBytes: number;
  /** Indexes rebuilt from their logs because they were missing, short or inconsistent. */
  rebuiltIndexes: number;
  /** The directory's entries as recovery listed them, before it removed any. */
  names: readonly string[];
  /** The partition's remote table, its torn tail cut. */
  table: RemoteTable;
  /** Its idempotent producers: the newest snapshot's, then the active segment's batches after it. */
  producers: RecoveredProducers;
}

/**
 * Rebuilds a partition's segment chain from its directory at boot:
 * - stems come from `.log` files and the remote table's markers; `.index` files of neither
 *   (`isOrphanIndex`) and temp files are removed; markers follow docs/DESIGN.md, "Markers and the boot rules";
 * - every sealed segment must follow the previous one with no gap (a hole refuses the partition);
 * - a sealed segment's index is trusted only if it is a whole number of increasing entries that
 *   point inside the log, and is rebuilt otherwise;
 * - the active (last) segment is scanned with checksums: a torn or failing tail is truncated, but
 *   a failing batch followed by a valid one is corruption in the middle and refuses the partition,
 *   because truncating there would drop acknowledged, checksum-valid batches.
 * The last segment is returned open for appending.
 */
export async function recoverSegments(
  disk: Disk,
  dir: string,
  indexIntervalBytes: number,
  label: string,
  logger: Logger,
  identity: MarkerIdentity | null = null,
): Promise<RecoveryReport> {
  const names = await disk.list(dir);
  const { table, live } = await openRemoteTable(disk, dir, names, label, logger);
  // Names come sorted, and stems are zero-padded: the starts are in order.
  const logs = names.filter((n) => /^\d{20}\.log$/.test(n)).map((n) => Number(n.slice(0, 20)));
  const logSet = new Set(logs);
  let removed = 0;
  for (const name of names) {
    if (name.endsWith(".tmp") || isOrphanIndex(name, logSet, live)) {
      await disk.unlink(`${dir}/${name}`);
      removed++;
    }
  }
  if (removed > 0) await disk.fsyncDir(dir);
  const { snapshot, offsets } = await ProducerSnapshots.newest(disk, dir, names, label, logger);
  const producers: RecoveredProducers = {
    states: ProducerStates.restored(label, snapshot?.entries ?? []),
    snapshots: new ProducerSnapshots(disk, dir, offsets),
  };
  const report: RecoveryReport = {
    segments: [],
    truncatedBytes: 0,
    rebuiltIndexes: 0,
    names,
    table,
    producers,
  };
  const producersFrom = snapshot?.offset ?? 0;
  const opened: Segment[] = [];
  try {
    await recoverChain(
      { disk, dir, logs, live, indexIntervalBytes, label, logger, identity, producersFrom },
      report,
      opened,
    );
  } catch (error) {
    // A refused partition keeps no file open: the active segment's handle is closed here.
    for (const segment of opened) {
      // The refusal below is what is reported; a close that fails on its way has nothing to add.
      await segment.logFile?.close().catch(() => {});
      segment.logFile = null;
    }
    throw error;
  }
  const logEnd = (report.segments.at(-1)?.endOffset ?? -1) + 1;
  if (producersFrom > logEnd) {
    // Never left by a truncation or a purge, which delete such snapshots first: its batches are not
    // the log's, and a retry judged against them could be taken for a duplicate.
    logger.warn("producer snapshot lies past the log's end; producers start unknown", {
      partition: label,
      snapshot_offset: producersFrom,
      log_end_offset: logEnd,
    });
    producers.states.clear();
  }
  return report;
}

/**
 * Whether `name` is an `.index` (or `.txnindex`) whose segment is gone: an index is kept while its segment exists
 * locally or remotely, `{start}.index` for a segment keyed by its start, `{start}-{end}.index` for a
 * merged one; a merge leaves the indexes of the segments it replaced (docs/DESIGN.md, "The
 * adjacent-segment merger").
 */
function isOrphanIndex(name: string, logs: ReadonlySet<number>, live: RemoteTableReplay): boolean {
  const match = /^(\d{20})(?:-(\d{20}))?\.(?:index|txnindex)$/.exec(name);
  if (match === null) return false;
  const start = Number(match[1]);
  const mergedEnd = match[2] === undefined ? null : Number(match[2]);
  if (mergedEnd === null && logs.has(start)) return false;
  const at = markerAt(live, start);
  if (at === null) return true;
  const marker = live.markerAt(at);
  return (marker.merged ? marker.endOffset : null) !== mergedEnd;
}

/** Where the table's live marker of the segment starting at `start` is, by bisection; null for none. */
function markerAt(live: RemoteTableReplay, start: number): number | null {
  let low = 0;
  let high = live.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (live.startOffsetAt(mid) < start) low = mid + 1;
    else high = mid;
  }
  return low < live.length && live.startOffsetAt(low) === start ? low : null;
}

interface ChainContext {
  disk: Disk;
  dir: string;
  /** The `.log`s' start offsets, in order. */
  logs: readonly number[];
  /** The remote table's live markers, in order. */
  live: RemoteTableReplay;
  indexIntervalBytes: number;
  label: string;
  logger: Logger;
  identity: MarkerIdentity | null;
  /** Where the producer snapshot was taken: the active segment's batches from there update the producers. */
  producersFrom: number;
}

/**
 * Walks the segments oldest first, the table's and the `.log`s' merged, validating the chain; every
 * segment with a `.log` it touches goes into `opened`.
 */
async function recoverChain(c: ChainContext, report: RecoveryReport, opened: Segment[]): Promise<void> {
  const { disk, dir, logs, live, indexIntervalBytes, label, logger, identity, producersFrom } = c;
  let m = 0;
  let l = 0;
  // Every marker is read into this one: a segment keeps its fields, not the marker.
  const scratch = emptyMarker();
  while (m < live.length || l < logs.length) {
    const start = Math.min(m < live.length ? live.startOffsetAt(m) : Infinity, logs[l] ?? Infinity);
    const segment = new Segment(dir, start, null);
    const previous = report.segments.at(-1);
    const hasLog = logs[l] === start;
    if (hasLog) {
      opened.push(segment);
      l++;
    }
    const found = m < live.length && live.startOffsetAt(m) === start ? live.markerAt(m++, scratch) : null;
    const marker = checkedMarker(found, start, label, identity);
    const last = m === live.length && l === logs.length;
    if (previous === undefined && start > producersFrom) forgetProducers(report, segment, c);
    if (marker !== null && !hasLog) {
      checkTieredPlace(previous, last, segment, label);
      recoverRemote(segment, marker);
      if (segment.endOffset >= producersFrom) forgetProducers(report, segment, c);
    } else if (!last) {
      await recoverSealed(disk, segment, indexIntervalBytes, label, report);
      if (segment.endOffset >= producersFrom) await replayProducers(disk, segment, producersFrom, report);
    } else {
      await recoverActive(disk, segment, { indexIntervalBytes, label, logger, producersFrom }, report);
    }
    if (marker !== null && hasLog) takeUploaded(segment, marker, label);
    if (previous !== undefined && previous.endOffset + 1 !== segment.startOffset) {
      throw new PartitionRefusedError(
        label,
        `hole in the chain: segment ${previous.stem} ends at offset ${previous.endOffset} but the next starts at ${segment.startOffset}`,
      );
    }
    report.segments.push(segment);
  }
}

/** A tiered segment belongs in the chain's prefix, and is never its last (active) segment. */
function checkTieredPlace(
  previous: Segment | undefined,
  last: boolean,
  segment: Segment,
  label: string,
): void {
  if (previous !== undefined && previous.location !== "remote") {
    throw new PartitionRefusedError(
      label,
      `segment ${segment.stem} is tiered but follows a local segment: tiered segments must be a prefix`,
    );
  }
  if (last) {
    throw new PartitionRefusedError(
      label,
      `the last segment ${segment.stem} has no .log: the active segment is never evicted`,
    );
  }
}

/** Both copies: the segment is local, and eviction can resume without re-uploading. */
function takeUploaded(segment: Segment, marker: RemoteMarker, label: string): void {
  if (marker.endOffset !== segment.endOffset || marker.sizeBytes !== segment.sizeBytes) {
    throw new PartitionRefusedError(
      label,
      `the marker of segment ${segment.stem} (${marker.startOffset}..${marker.endOffset}, ${marker.sizeBytes} bytes) ` +
        `does not describe its .log (..${segment.endOffset}, ${segment.sizeBytes} bytes)`,
    );
  }
  segment.marker = marker;
  segment.location = "uploaded";
}

/** A marker of another incarnation or generation is stale: it quarantines the partition. */
function checkedMarker(
  marker: RemoteMarker | null,
  start: number,
  label: string,
  identity: MarkerIdentity | null,
): RemoteMarker | null {
  if (
    marker !== null && identity !== null &&
    (marker.createdRevision !== identity.createdRevision ||
      marker.purgeGeneration !== identity.purgeGeneration)
  ) {
    throw new PartitionRefusedError(
      label,
      `stale marker of segment ${
        segmentStem(start)
      } in ${remoteTableName} (revision ${marker.createdRevision}, generation ${marker.purgeGeneration}; ` +
        `the partition is ${identity.createdRevision}, ${identity.purgeGeneration}): quarantined`,
    );
  }
  return marker;
}

/**
 * A tiered segment: bounds, sizes and timestamps from its marker alone. Its index is not read: a
 * read loads it on demand into the shard's bounded index cache (`RemoteReader.index`), from the
 * local `.index` or from the store, so boot costs the same whatever the bucket holds.
 */
function recoverRemote(segment: Segment, marker: RemoteMarker): void {
  segment.index = null;
  segment.sizeBytes = marker.sizeBytes;
  segment.endOffset = marker.endOffset;
  segment.firstTimestampUs = marker.startTimestampUs;
  segment.maxTimestampUs = marker.maxTimestampUs;
  segment.lastIndexedPosition = -1;
  segment.sealed = true;
  segment.marker = marker;
  segment.location = "remote";
  markVisible(segment);
}

async function recoverSealed(
  disk: Disk,
  segment: Segment,
  indexIntervalBytes: number,
  label: string,
  report: RecoveryReport,
): Promise<void> {
  const file = await disk.open(segment.logPath, { readOnly: true });
  try {
    const size = await file.sizeBytes();
    const stored = await readIndexFile(disk, segment.indexPath);
    const usable = stored !== null && stored.isConsistentWith(size) ? stored : null;
    const index = usable ?? new SparseIndex();
    const from = usable?.last?.position ?? 0;
    let last: BatchHeader | null = null;
    let lastIndexed = usable?.last?.position ?? -1;
    // Index entries hold the largest timestamp up to their batch: a trusted index's last one
    // covers every batch before the scan.
    let maxTimestampUs = usable?.last?.timestampUs ?? 0;
    let firstTimestampUs: number | null = usable !== null && usable.length > 0
      ? usable.entryAt(0).timestampUs
      : null;
    const end = await scanBatches(file, from, size, { verify: false }, (_batch, header, position) => {
      maxTimestampUs = Math.max(maxTimestampUs, header.maxTimestampUs);
      firstTimestampUs ??= header.baseTimestampUs;
      if (usable === null && (lastIndexed < 0 || position - lastIndexed >= indexIntervalBytes)) {
        index.add({
          relativeOffset: header.baseOffset - segment.startOffset,
          position,
          timestampUs: maxTimestampUs,
        });
        lastIndexed = position;
      }
      last = header;
      return true;
    });
    if (end.kind !== "end") {
      throw new PartitionRefusedError(
        label,
        `sealed segment ${segment.stem} is ${end.kind} at byte ${end.position}`,
      );
    }
    const lastHeader = last as BatchHeader | null;
    if (lastHeader === null) {
      throw new PartitionRefusedError(label, `sealed segment ${segment.stem} is empty`);
    }
    if (usable === null) {
      await writeIndexFile(disk, segment.indexPath, index);
      report.rebuiltIndexes++;
    }
    segment.index = index;
    segment.sizeBytes = size;
    segment.endOffset = lastHeader.baseOffset + lastHeader.lastOffsetDelta;
    segment.maxTimestampUs = maxTimestampUs;
    segment.firstTimestampUs = firstTimestampUs ?? lastHeader.baseTimestampUs;
    segment.lastIndexedPosition = index.last?.position ?? -1;
    segment.sealed = true;
    markVisible(segment);
  } finally {
    await file.close();
  }
}

async function recoverActive(
  disk: Disk,
  segment: Segment,
  c: { indexIntervalBytes: number; label: string; logger: Logger; producersFrom: number },
  report: RecoveryReport,
): Promise<void> {
  const { indexIntervalBytes, label, logger, producersFrom } = c;
  // Reopenable, as `createSegment` makes it: the active segment's .log may close between uses.
  const file = await disk.open(segment.logPath, { reopenable: true });
  const size = await file.sizeBytes();
  const index = new SparseIndex();
  let expectedOffset = segment.startOffset;
  let mismatch: number | null = null;
  const producers = report.producers.states;
  // Rebuilt with the producers' state, as the appends built it: the active segment has no file.
  const abortedTxns = new AbortedTxnIndex();
  const end = await scanBatches(file, 0, size, { verify: true }, (batch, header, position) => {
    if (header.baseOffset !== expectedOffset) {
      mismatch = position;
      return false;
    }
    if (header.baseOffset >= producersFrom) {
      const aborted = recordIdempotent(producers, batch, header.baseOffset);
      if (aborted !== null) abortedTxns.add(aborted);
    }
    // Index entries hold the largest timestamp up to their batch, as the append writes them.
    segment.maxTimestampUs = Math.max(segment.maxTimestampUs, header.maxTimestampUs);
    if (index.length === 0 || position - index.last!.position >= indexIntervalBytes) {
      const relativeOffset = header.baseOffset - segment.startOffset;
      index.add({ relativeOffset, position, timestampUs: segment.maxTimestampUs });
    }
    segment.endOffset = header.baseOffset + header.lastOffsetDelta;
    segment.firstTimestampUs ??= header.baseTimestampUs;
    expectedOffset = segment.endOffset + 1;
    return true;
  });
  const validEnd = mismatch ?? end.position;
  if (
    end.kind === "corrupt" && await validBatchFollows(file, end.position, size, end.header, expectedOffset)
  ) {
    await file.close();
    throw new PartitionRefusedError(
      label,
      `segment ${segment.stem} has a corrupt batch at byte ${end.position} followed by valid data; refusing to drop acknowledged batches`,
    );
  }
  if (validEnd < size) {
    logger.warn("truncating torn tail", {
      partition: label,
      segment: segment.stem,
      from_byte: validEnd,
      bytes: size - validEnd,
    });
    await file.truncate(validEnd);
    await file.sync();
    report.truncatedBytes += size - validEnd;
  }
  // The active segment's index is rebuilt here at every boot and written whole from memory at its
  // seal. It has no file until then (one left from an older layout is overwritten at the seal), so a
  // boot of ten thousand partitions opens, writes and fsyncs no index.
  segment.index = index;
  segment.abortedTxns = abortedTxns;
  segment.sizeBytes = validEnd;
  segment.lastIndexedPosition = index.last?.position ?? -1;
  segment.logFile = file;
  markVisible(segment);
}

/** Whether a plausible batch with the next expected offset starts right after a corrupt one. */
async function validBatchFollows(
  file: Awaited<ReturnType<Disk["open"]>>,
  position: number,
  size: number,
  header: BatchHeader | null,
  expectedOffset: number,
): Promise<boolean> {
  if (header === null) return false;
  const next = position + header.lengthBytes;
  if (next >= size) return false;
  const bytes = await readUpTo(file, next, Math.min(size - next, batchHeaderBytes));
  const following = decodeBatchHeader(bytes);
  return following !== null && isPlausibleHeader(following) &&
    following.baseOffset === expectedOffset + header.messageCount && next + following.lengthBytes <= size;
}

function markVisible(segment: Segment): void {
  segment.visibleSizeBytes = segment.sizeBytes;
  segment.visibleEndOffset = segment.endOffset;
}

/**
 * The producers' state after the snapshot needs this remote segment's batches, or offsets retention
 * deleted, which boot cannot read: the state is forgotten, and the local segments after them replayed
 * into an empty one. Producers whose last batches were there are unknown, and start at any sequence.
 */
function forgetProducers(report: RecoveryReport, segment: Segment, c: ChainContext): void {
  if (report.producers.states.size === 0) return;
  c.logger.warn("producer snapshot older than the local log; producers before it start unknown", {
    partition: c.label,
    snapshot_offset: c.producersFrom,
    segment: segment.stem,
  });
  report.producers.states.clear();
}

/**
 * A sealed segment after the producer snapshot (the newest was lost: damaged, or a crash between a
 * roll's steps): its idempotent batches from the snapshot's offset on are replayed, as the append
 * recorded them, reading the whole `.log` a window at a time.
 */
async function replayProducers(
  disk: Disk,
  segment: Segment,
  producersFrom: number,
  report: RecoveryReport,
): Promise<void> {
  const file = await disk.open(segment.logPath, { readOnly: true });
  try {
    const producers = report.producers.states;
    await scanBatches(file, 0, segment.sizeBytes, { verify: false }, (batch, header) => {
      if (header.baseOffset >= producersFrom) recordIdempotent(producers, batch, header.baseOffset);
      return true;
    });
  } finally {
    await file.close();
  }
}

/**
 * An idempotent producer's batch (its producer id is not -1), or a transaction marker, updates its
 * producer's state, as the append did; the header is read whole only for those.
 */
function recordIdempotent(producers: ProducerStates, batch: Uint8Array, offset: number): AbortedTxn | null {
  const view = new DataView(batch.buffer, batch.byteOffset, batch.byteLength);
  if (view.getBigInt64(batchField.producerId) === -1n) return null;
  const completed = producers.recordBatch(batch, readRecordBatchHeader(batch), offset);
  return completed === null ? null : producers.abortedEntryOf(completed);
}
