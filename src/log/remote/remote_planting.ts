import { assert } from "../../runtime/assert.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import { unlinkIfPresent, writeWholeFile } from "../../runtime/disk/file_ops.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { EpochStart } from "../partition/leader_epochs.ts";
import { PartitionRefusedError } from "../log_errors.ts";
import type { RemoteMarker } from "./remote_marker.ts";
import { openRemoteTable } from "./remote_table_open.ts";
import { remoteSegmentOf, segmentStem } from "../segment/segment.ts";
import { closeFiles, SegmentChain } from "../segment/segment_chain.ts";
import { readSuperblock, type Superblock, writeSuperblock } from "../partition/superblock.ts";

/**
 * A read replica's log (docs/DESIGN.md, "Read replicas") holds no data of its own: tiered segments
 * as markers of its source's objects, and an empty active segment after them, which no produce ever
 * fills. New segments of the source are planted at its head: the empty active segment gives way to
 * their markers and a new empty one after them.
 */

/** Segments one planting takes at most; a follower plants the rest in the next one. */
export const plantedSegmentsMax = 256;

/**
 * Plants `markers` (contiguous, the first at the empty active segment's offset, or past it when
 * that segment is the whole log, or at the start of a planted segment when it is a merge of those
 * from there on and of newer ones), run in the writer loop: the markers are appended to the remote
 * table (where the first replaces the planted segments within its range) and the new active
 * segment created before the old one goes, so a crash leaves files that `settlePlantedDir` puts
 * right at the next boot.
 */
export async function plantRemoteSegments(
  disk: Disk,
  dir: string,
  chain: SegmentChain,
  markers: readonly RemoteMarker[],
  epochs: readonly EpochStart[],
): Promise<void> {
  const old = chain.active;
  assert(
    markers.length > 0 && markers.length <= plantedSegmentsMax,
    `Cannot plant ${markers.length} segments`,
  );
  assert(
    old.isEmpty && chain.pendingNextOffset === old.startOffset,
    `Cannot plant segments in ${dir}: its active segment holds data`,
  );
  const first = markers[0]!.startOffset;
  // The planted segments a merge's marker replaces: those from where it starts.
  const kept = chain.segments.length === 1 || first >= old.startOffset
    ? chain.segments.length - 1
    : chain.segments.findIndex((s) => s.startOffset === first);
  assert(kept >= 0, `Cannot plant segment ${first} in ${dir}: no planted segment starts there`);
  // A log that holds nothing but its empty active segment may start again further on.
  let next = chain.segments.length === 1
    ? Math.max(old.startOffset, first)
    : chain.segments[kept]!.startOffset;
  for (const m of markers) {
    assert(m.startOffset === next && m.endOffset >= m.startOffset, `Cannot plant segment ${m.startOffset}`);
    next = m.endOffset + 1;
  }
  assert(next > old.startOffset, `Cannot plant segments in ${dir} that end before its log does`);
  // The epochs first: boot drops those that start past the log's end, and markers that survive a
  // crash are never planted again.
  for (const e of epochs) chain.epochs.assign(e.epoch, e.startOffset);
  await chain.epochs.persist();
  const replaced = chain.segments.length - 1 - kept;
  await chain.remoteTable.append(markers, replaced);
  const active = await SegmentChain.createSegment(disk, dir, next);
  const before = chain.takeAll();
  assert(before.pop() === old, "the planted chain ends at its active segment");
  const gone = before.splice(kept);
  chain.restart(active, [...before, ...markers.map((m) => remoteSegmentOf(dir, m))]);
  await closeFiles(old);
  await disk.unlink(old.logPath);
  for (const s of gone) {
    await unlinkIfPresent(disk, s.indexPath);
    if (s.mayHaveTxnIndexFile) await unlinkIfPresent(disk, s.txnIndexPath);
  }
  await disk.fsyncDir(dir);
}

/** What settling a read replica's directory found. */
export interface SettledDir {
  /** Where its markers end (exclusive), which is where its active segment starts. */
  endOffset: number;
  /** Markers dropped: torn, or not following the one before (the follower plants them again). */
  droppedMarkers: number;
  /** The superblock's floor was brought to `endOffset` (a planting a crash cut short). */
  floorRewritten: boolean;
}

/**
 * Puts a read replica's directory right before recovery reads it: the remote table's markers are
 * the log, oldest first, up to the first that does not follow the one before (those go, and the
 * follower plants them again), a torn tail cut (a planting a crash cut short); every `.log` is empty
 * (one that is not refuses the partition); the active segment is the one after the last marker, or
 * the newest `.log` with no marker. The superblock's floor and source watermark are brought to that
 * offset. Null for a directory with neither markers nor a `.log`.
 */
export async function settlePlantedDir(
  disk: Disk,
  dir: string,
  label: string,
  logger: Logger,
): Promise<SettledDir | null> {
  const names = await disk.list(dir);
  const logs = names.filter((n) => /^\d{20}\.log$/.test(n));
  for (const log of logs) {
    const stat = await disk.stat(`${dir}/${log}`);
    if (stat !== null && stat.sizeBytes > 0) {
      throw new PartitionRefusedError(label, `${log} holds data, and a read replica writes none`);
    }
  }
  const opened = await openRemoteTable(disk, dir, names, label, logger);
  const markers = opened.live.markers();
  const kept = contiguousPrefix(markers);
  if (kept.length < markers.length) await opened.table.rewrite(kept);
  const end = kept.length === 0 ? null : kept.at(-1)!.endOffset + 1;
  const endOffset = end ?? (logs.length === 0 ? null : Number(logs.at(-1)!.slice(0, 20)));
  if (endOffset === null) return null;
  const activeName = `${segmentStem(endOffset)}.log`;
  for (const log of logs) if (log !== activeName) await disk.unlink(`${dir}/${log}`);
  if (!logs.includes(activeName)) await writeWholeFile(disk, `${dir}/${activeName}`, new Uint8Array(0));
  await disk.fsyncDir(dir);
  const superblock = await readSuperblock(disk, dir);
  const floorRewritten = superblock !== null && superblock.restoredFrom !== null &&
    superblock.tieredUpToOffset !== endOffset;
  if (floorRewritten) await writeSuperblock(disk, dir, plantedSuperblock(superblock!, endOffset));
  const droppedMarkers = opened.tornRecords + markers.length - kept.length;
  return { endOffset, droppedMarkers, floorRewritten };
}

/** The markers up to the first that does not start where the one before ends. */
function contiguousPrefix(markers: readonly RemoteMarker[]): RemoteMarker[] {
  let kept = 0;
  while (
    kept < markers.length && (kept === 0 || markers[kept]!.startOffset === markers[kept - 1]!.endOffset + 1)
  ) {
    kept++;
  }
  return markers.slice(0, kept);
}

/** The superblock of a read replica whose markers end at `end` (exclusive). */
export function plantedSuperblock(current: Superblock, end: number): Superblock {
  const from = current.restoredFrom;
  assert(from !== null, "a read replica's superblock names its source");
  return { ...current, tieredUpToOffset: end, restoredFrom: { ...from, belowOffset: end } };
}
