import { Crc32Stream } from "../../runtime/checksum/crc32.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import { readUpTo, writeWholeFile } from "../../runtime/disk/file_ops.ts";
import { yieldToReactor } from "../../runtime/cooperation/piece_gate.ts";
import { encodeRemoteMarker, type MarkerIdentity, type RemoteMarker } from "../remote/remote_marker.ts";
import type { Segment } from "./segment.ts";

/**
 * Eviction's durable steps, run inside the writer loop for each victim in chain order: the 128-byte
 * `.remote` marker is written and fsynced, the directory fsynced, the `.log` unlinked, the
 * directory fsynced. A crash between any two leaves a chain boot accepts: a marker without its sync
 * beside its `.log` is removed, and one that is durable makes the segment uploaded or remote. The
 * `.index` stays; totals still count the segment. `victims` maps a start offset to the `.log`'s
 * CRC32; each victim is checked again first, since a purge or retention may have run since it was
 * chosen. Returns how many were evicted.
 */
export async function evictSegments(
  disk: Disk,
  dir: string,
  segments: readonly Segment[],
  victims: ReadonlyMap<number, number>,
  floor: number,
  identity: MarkerIdentity,
): Promise<number> {
  let evicted = 0;
  for (const segment of segments) {
    const logCrc32 = victims.get(segment.startOffset);
    if (logCrc32 === undefined) continue;
    // Checked again inside the loop: a purge or retention may have run since the hashing.
    if (!segment.sealed || segment.endOffset >= floor || segment.location === "remote") continue;
    const marker = markerOf(segment, identity, logCrc32);
    await writeWholeFile(disk, segment.markerPath, encodeRemoteMarker(marker));
    await disk.fsyncDir(dir);
    // From here on reads go to the store for this segment; an open read handle keeps working.
    segment.marker = marker;
    segment.location = "remote";
    // Its index leaves memory with its `.log`: the `.index` file stays, and a read loads it into the
    // shard's bounded index cache (docs/DESIGN.md, "Cost follows what is local").
    segment.index = null;
    await disk.unlink(segment.logPath);
    await disk.fsyncDir(dir);
    evicted++;
  }
  return evicted;
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
