import { Crc32Stream } from "../../runtime/checksum/crc32.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import { readUpTo } from "../../runtime/disk/file_ops.ts";
import { yieldToReactor } from "../../runtime/cooperation/piece_gate.ts";
import type { MarkerIdentity, RemoteMarker } from "../remote/remote_marker.ts";
import type { RemoteTable } from "../remote/remote_table.ts";
import type { Segment } from "./segment.ts";

/**
 * Eviction's durable steps, run inside the writer loop for the victims in chain order: their markers
 * are appended to the remote table and fsynced (the directory too when the table is new), then their
 * `.log`s unlinked and the directory fsynced. A crash between any two leaves a chain boot accepts: a
 * record cut short is the table's torn tail, cut at boot with every `.log` still there, and a durable
 * one makes its segment uploaded or remote. The `.index` stays; totals still count the segment.
 * `victims` maps a start offset to the `.log`'s CRC32; each victim is checked again first, since a
 * purge or retention may have run since it was chosen. Returns how many were evicted.
 */
export async function evictSegments(
  disk: Disk,
  dir: string,
  segments: readonly Segment[],
  table: RemoteTable,
  victims: ReadonlyMap<number, number>,
  floor: number,
  identity: MarkerIdentity,
): Promise<number> {
  const evicting: { segment: Segment; marker: RemoteMarker }[] = [];
  for (const segment of segments) {
    const logCrc32 = victims.get(segment.startOffset);
    if (logCrc32 === undefined) continue;
    // Checked again inside the loop: a purge or retention may have run since the hashing.
    if (!segment.sealed || segment.endOffset >= floor || segment.location === "remote") continue;
    evicting.push({ segment, marker: markerOf(segment, identity, logCrc32) });
  }
  if (evicting.length === 0) return 0;
  // A segment found uploaded at boot has its marker in the table already: the new one replaces it.
  await table.append(evicting.map((e) => e.marker), evicting.filter((e) => e.segment.marker !== null).length);
  for (const { segment, marker } of evicting) {
    // From here on reads go to the store for this segment; an open read handle keeps working.
    segment.marker = marker;
    segment.location = "remote";
    // Its index leaves memory with its `.log`: the `.index` file stays, and a read loads it into the
    // shard's bounded index cache (docs/DESIGN.md, "Cost follows what is local").
    segment.index = null;
    // Its aborted transactions likewise: the `.txnindex` file stays, read when a fetch needs it.
    if (segment.abortedTxns !== null && segment.abortedTxns !== "none") {
      segment.abortedTxns = segment.abortedTxns.entries.length === 0 ? "none" : null;
    }
    await disk.unlink(segment.logPath);
  }
  await disk.fsyncDir(dir);
  return evicting.length;
}

function markerOf(segment: Segment, identity: MarkerIdentity, logCrc32: number): RemoteMarker {
  return {
    startOffset: segment.startOffset,
    endOffset: segment.endOffset,
    sizeBytes: segment.sizeBytes,
    indexSizeBytes: segment.localIndex.sizeBytes,
    startTimestampUs: segment.firstTimestampUs ?? segment.maxTimestampUs,
    endTimestampUs: segment.maxTimestampUs,
    maxTimestampUs: segment.maxTimestampUs,
    createdRevision: identity.createdRevision,
    purgeGeneration: identity.purgeGeneration,
    logCrc32,
    merged: false,
  };
}

const hashPieceBytes = 1024 * 1024;

/** CRC32 of a segment's `.log`, read 1 MiB at a time with a yield after each piece. */
export async function hashLog(disk: Disk, segment: Segment): Promise<number> {
  const crc = new Crc32Stream();
  const file = await disk.open(segment.logPath, { readOnly: true });
  try {
    for (let at = 0; at < segment.sizeBytes; at += hashPieceBytes) {
      crc.update(await readUpTo(file, at, Math.min(hashPieceBytes, segment.sizeBytes - at)));
      await yieldToReactor();
    }
  } finally {
    await file.close();
  }
  return crc.digest();
}
