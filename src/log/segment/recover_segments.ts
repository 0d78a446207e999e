import { FormatVersionError } from "../../runtime/format_version_error.ts";
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
import { Segment } from "./segment.ts";
import { readIndexFile, SparseIndex, writeIndexFile } from "./sparse_index.ts";
import {
  decodeRemoteMarker,
  type MarkerIdentity,
  type RemoteMarker,
  remoteMarkerBytes,
} from "../remote/remote_marker.ts";

export interface RecoveryReport {
  segments: Segment[];
  /** Bytes cut from a torn or checksum-failing tail of the active segment. */
  truncatedBytes: number;
  /** Indexes rebuilt from their logs because they were missing, short or inconsistent. */
  rebuiltIndexes: number;
  /** The directory's entries as recovery listed them, before it removed any. */
  names: readonly string[];
}

/**
 * Rebuilds a partition's segment chain from its directory at boot:
 * - stems come from `.log` and `.remote` files; `.index` files with neither and temp files are
 *   removed; markers follow docs/DESIGN.md, "Markers and the boot rules";
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
  const logs = new Set(names.filter((n) => /^\d{20}\.log$/.test(n)).map((n) => n.slice(0, 20)));
  const markers = new Set(names.filter((n) => /^\d{20}\.remote$/.test(n)).map((n) => n.slice(0, 20)));
  const stems = [...new Set([...logs, ...markers])].sort();
  let removed = 0;
  for (const name of names) {
    const orphanIndex = /^(\d{20})\.index$/.exec(name);
    // An index is kept while its segment exists locally or remotely; a marker keeps it too.
    if (name.endsWith(".tmp") || (orphanIndex && !stems.includes(orphanIndex[1]!))) {
      await disk.unlink(`${dir}/${name}`);
      removed++;
    }
  }
  if (removed > 0) await disk.fsyncDir(dir);
  const report: RecoveryReport = { segments: [], truncatedBytes: 0, rebuiltIndexes: 0, names };
  const opened: Segment[] = [];
  try {
    await recoverChain(
      { disk, dir, stems, logs, markers, indexIntervalBytes, label, logger, identity },
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
  return report;
}

interface ChainContext {
  disk: Disk;
  dir: string;
  stems: readonly string[];
  logs: ReadonlySet<string>;
  markers: ReadonlySet<string>;
  indexIntervalBytes: number;
  label: string;
  logger: Logger;
  identity: MarkerIdentity | null;
}

/** Walks the stems oldest first, validating the chain; every segment it touches goes into `opened`. */
async function recoverChain(c: ChainContext, report: RecoveryReport, opened: Segment[]): Promise<void> {
  const { disk, dir, stems, logs, markers, indexIntervalBytes, label, logger, identity } = c;
  for (const [i, stem] of stems.entries()) {
    const segment = new Segment(dir, Number(stem));
    opened.push(segment);
    const previous = report.segments.at(-1);
    const hasLog = logs.has(stem);
    const marker = markers.has(stem)
      ? await readMarker(disk, segment, label, identity, hasLog, logger)
      : null;
    if (marker !== null && !hasLog && previous !== undefined && previous.location !== "remote") {
      throw new PartitionRefusedError(
        label,
        `segment ${stem} is tiered but follows a local segment: tiered segments must be a prefix`,
      );
    }
    if (marker !== null && !hasLog && i === stems.length - 1) {
      throw new PartitionRefusedError(
        label,
        `the last segment ${stem} has no .log: the active segment is never evicted`,
      );
    }
    if (marker !== null && !hasLog) {
      recoverRemote(segment, marker);
    } else if (i < stems.length - 1) {
      await recoverSealed(disk, segment, indexIntervalBytes, label, report);
    } else {
      await recoverActive(disk, segment, indexIntervalBytes, label, report, logger);
    }
    if (marker !== null && hasLog) {
      // Both copies: the segment is local, and eviction can resume without re-uploading.
      segment.marker = marker;
      segment.location = "uploaded";
    }
    if (previous !== undefined && previous.endOffset + 1 !== segment.startOffset) {
      throw new PartitionRefusedError(
        label,
        `hole in the chain: segment ${previous.stem} ends at offset ${previous.endOffset} but the next starts at ${segment.startOffset}`,
      );
    }
    report.segments.push(segment);
  }
}

/**
 * Reads and checks a marker; one from another incarnation or generation quarantines the partition.
 * An unreadable marker (empty or torn) beside its `.log` is an eviction a crash cut short before the
 * marker was synced: the `.log` is only unlinked after that, so the marker is removed and the segment
 * stays local (null). Without its `.log`, an unreadable marker refuses the partition.
 */
async function readMarker(
  disk: Disk,
  segment: Segment,
  label: string,
  identity: MarkerIdentity | null,
  hasLog: boolean,
  logger: Logger,
): Promise<RemoteMarker | null> {
  const file = await disk.open(segment.markerPath, { readOnly: true });
  let marker: RemoteMarker | null = null;
  let unreadable: Error | null = null;
  try {
    marker = decodeRemoteMarker(await readUpTo(file, 0, remoteMarkerBytes + 1));
  } catch (error) {
    if (error instanceof FormatVersionError) {
      throw new PartitionRefusedError(label, `segment ${segment.stem}: ${error.message}`, { cause: error });
    }
    unreadable = error as Error;
  } finally {
    await file.close();
  }
  if (marker === null) {
    if (!hasLog) {
      throw new PartitionRefusedError(label, `segment ${segment.stem}: ${unreadable?.message}`, {
        cause: unreadable,
      });
    }
    logger.warn("removing an unfinished eviction's marker", { partition: label, segment: segment.stem });
    await disk.unlink(segment.markerPath);
    await disk.fsyncDir(segment.dir);
    return null;
  }
  if (marker.startOffset !== segment.startOffset) {
    throw new PartitionRefusedError(
      label,
      `marker ${segment.stem}.remote names segment ${marker.startOffset}`,
    );
  }
  if (
    identity !== null &&
    (marker.createdRevision !== identity.createdRevision ||
      marker.purgeGeneration !== identity.purgeGeneration)
  ) {
    throw new PartitionRefusedError(
      label,
      `stale marker ${segment.stem}.remote (revision ${marker.createdRevision}, generation ${marker.purgeGeneration}; ` +
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
  indexIntervalBytes: number,
  label: string,
  report: RecoveryReport,
  logger: Logger,
): Promise<void> {
  // Reopenable, as `createSegment` makes it: the active segment's .log may close between uses.
  const file = await disk.open(segment.logPath, { reopenable: true });
  const size = await file.sizeBytes();
  const index = new SparseIndex();
  let expectedOffset = segment.startOffset;
  let mismatch: number | null = null;
  const end = await scanBatches(file, 0, size, { verify: true }, (_batch, header, position) => {
    if (header.baseOffset !== expectedOffset) {
      mismatch = position;
      return false;
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
