import { FormatVersionError, storageFormatVersion } from "../../runtime/format_version_error.ts";
import { pack, unpack } from "msgpackr";
import type { Partition } from "../../log/partition/partition.ts";

/**
 * The lazily uploaded partition manifest (docs/DESIGN.md, "Housekeeping"; its layout is
 * docs/FORMAT.md, "The partition manifest"): a derived description of a partition's tiered
 * segments, uploaded by housekeeping under `meta/` when the remote set changed. Never the source of
 * truth for a live cluster; it is what a restore into an empty cluster reads.
 */
export interface PartitionManifest {
  /** `storageFormatVersion`. */
  version: number;
  streamId: number;
  topicId: number;
  partitionId: number;
  createdRevision: string;
  purgeGeneration: number;
  /** Exclusive: every offset below it is in the store. */
  tieredUpToOffset: number;
  /** Exclusive: total retention deleted every offset below it. */
  deletedUpToOffset: number;
  /** Segments below the floor and at or above the watermark, oldest first. */
  segments: ManifestSegment[];
}

export interface ManifestSegment {
  startOffset: number;
  endOffset: number;
  sizeBytes: number;
  maxTimestampUs: number;
  /**
   * The rest of a marker's fields, from the segment's marker once it has one (evicted or uploaded
   * and then reopened); null while only the `.log` is local, when a restore HEADs the object instead.
   * An older manifest lacks the last three: they read as null.
   */
  logCrc32: number | null;
  indexSizeBytes: number | null;
  startTimestampUs: number | null;
  endTimestampUs: number | null;
  /** A merged segment, whose objects are keyed by its start and end; absent in an older manifest. */
  merged?: boolean;
}

/** Segments in one manifest at most: the newest this many (docs/DESIGN.md, "Housekeeping"). */
export const manifestSegmentsMax = 65_536;

export function manifestOf(partition: Partition): PartitionManifest {
  const sb = partition.superblock;
  const segments = partition.log.segments
    .filter((s) => s.sealed && s.endOffset < sb.tieredUpToOffset && s.startOffset >= sb.deletedUpToOffset)
    .slice(-manifestSegmentsMax)
    .map((s) => ({
      startOffset: s.startOffset,
      endOffset: s.endOffset,
      sizeBytes: s.sizeBytes,
      maxTimestampUs: s.maxTimestampUs,
      logCrc32: s.marker?.logCrc32 ?? null,
      indexSizeBytes: s.marker?.indexSizeBytes ?? null,
      startTimestampUs: s.marker?.startTimestampUs ?? null,
      endTimestampUs: s.marker?.endTimestampUs ?? null,
      merged: s.mergedEndOffset !== null,
    }));
  return {
    version: storageFormatVersion,
    ...partition.address,
    createdRevision: sb.createdRevision,
    purgeGeneration: sb.purgeGeneration,
    tieredUpToOffset: sb.tieredUpToOffset,
    deletedUpToOffset: sb.deletedUpToOffset,
    segments,
  };
}

export function encodeManifest(m: PartitionManifest): Uint8Array {
  return pack(m);
}

export function decodeManifest(bytes: Uint8Array): PartitionManifest {
  const m = unpack(bytes) as PartitionManifest;
  if (typeof m?.version === "number" && m.version !== storageFormatVersion) {
    throw new FormatVersionError("a partition manifest", m.version, storageFormatVersion);
  }
  if (m?.version !== storageFormatVersion || !Array.isArray(m.segments)) {
    throw new Error("Cannot read manifest: unknown format");
  }
  for (const s of m.segments) {
    s.indexSizeBytes ??= null;
    s.startTimestampUs ??= null;
    s.endTimestampUs ??= null;
  }
  return m;
}
