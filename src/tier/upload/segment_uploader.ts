import { storageFormatVersion } from "../../runtime/format_version_error.ts";
import type { Segment } from "../../log/segment/segment.ts";
import { assert } from "../../runtime/assert.ts";
import { type Disk, DiskError, type DiskFile } from "../../runtime/disk/disk.ts";
import { Crc32Stream } from "../../runtime/checksum/crc32.ts";
import type { TokenBucket } from "../../runtime/cooperation/token_bucket.ts";
import { type PieceGate, yieldToReactor } from "../../runtime/cooperation/piece_gate.ts";
import { readUpToInto } from "../../runtime/disk/file_ops.ts";
import { PreconditionFailedError } from "../../objectstore/object_store_errors.ts";
import type { DeadlineObjectStore } from "../../objectstore/retrying_object_store.ts";
import { producerSnapshotPath } from "../../log/producers/producer_snapshots.ts";
import type { SegmentKeys } from "../bucket/object_keys.ts";

/** What an upload needs to know of a sealed segment. */
export interface SealedSegment {
  logPath: string;
  indexPath: string;
  /** The producer snapshot taken at the segment's end, uploaded with it when the file exists. */
  producersPath: string;
  /** The segment's aborted-transaction index, uploaded with it when the file exists. */
  txnIndexPath: string;
  startOffset: number;
  endOffset: number;
  startTimestampUs: number;
  /** The last batch's timestamp. */
  endTimestampUs: number;
  maxTimestampUs: number;
}

/** What an upload needs of a segment of the log (sealed: its files no longer change). */
export function sealedSegmentOf(segment: Segment): SealedSegment {
  return {
    logPath: segment.logPath,
    indexPath: segment.indexPath,
    producersPath: producerSnapshotPath(segment.dir, segment.endOffset + 1),
    txnIndexPath: segment.txnIndexPath,
    startOffset: segment.startOffset,
    endOffset: segment.endOffset,
    startTimestampUs: segment.firstTimestampUs ?? segment.maxTimestampUs,
    // The log's timestamps are server-assigned and never go backwards (`SegmentChain.append`), so
    // the last batch's is the segment's latest, as the `.remote` marker records it too.
    endTimestampUs: segment.maxTimestampUs,
    maxTimestampUs: segment.maxTimestampUs,
  };
}

export interface UploadDeps {
  disk: Disk;
  store: DeadlineObjectStore;
  /** `upload_piece_size`: read, hash and send unit; one yield per piece. */
  pieceBytes: number;
  /** `upload_bandwidth`, charged once per segment. */
  bandwidth: TokenBucket;
  /** The piece gate: each piece's CPU work waits for its turn (else a yield after each piece). */
  gate?: PieceGate;
}

export type UploadOutcome =
  | {
    kind: "uploaded";
    logCrc32: number;
    sizeBytes: number;
    indexSizeBytes: number;
    /** The producer snapshot's bytes; 0 when the segment went without one. */
    sidecarSizeBytes: number;
    alreadyThere: boolean;
  }
  /** An object already there with other bytes: reported, never overwritten; the floor stalls. */
  | { kind: "anomaly"; detail: string };

export const segmentFormatVersion = String(storageFormatVersion);

/**
 * Uploads one sealed segment's `.log`, then its `.index`, then the producer snapshot taken at its
 * end when there is one (docs/FORMAT.md, "Producer snapshots"). The `.log` is read twice, piece by
 * piece with a yield after each: first to compute its CRC32 (which a streamed PUT must declare up
 * front), then to send it; the store checks the second pass against the first, so a file that
 * changed in between is refused rather than stored. Create-if-absent: a `PreconditionFailed` whose
 * HEAD shows the same size and CRC32 is a re-upload after a crash and counts as success.
 */
export async function uploadSegment(
  deps: UploadDeps,
  segment: SealedSegment,
  keys: SegmentKeys,
  deadlineAtMs: number,
): Promise<UploadOutcome> {
  const log = await deps.disk.open(segment.logPath, { readOnly: true });
  const index = await deps.disk.open(segment.indexPath, { readOnly: true }).catch(async (error) => {
    await log.close();
    throw error;
  });
  const upload: OpenUpload = { segment, log, index, keys, deadlineAtMs };
  try {
    return await uploadInPieces(deps, upload);
  } finally {
    await log.close();
    await index.close();
  }
}

/** One segment's upload under way: its files open for reading, its object keys, its deadline. */
interface OpenUpload {
  segment: SealedSegment;
  log: DiskFile;
  index: DiskFile;
  keys: SegmentKeys;
  deadlineAtMs: number;
}

/** The user metadata of a segment's `.log` object: what a HEAD needs to check it without reading it. */
export function segmentMetadata(
  segment: Omit<SealedSegment, "logPath" | "indexPath" | "producersPath" | "txnIndexPath">,
  sizeBytes: number,
  indexSizeBytes: number,
  logCrc32: number,
): Record<string, string> {
  return {
    "start-offset": String(segment.startOffset),
    "end-offset": String(segment.endOffset),
    "start-timestamp": String(segment.startTimestampUs),
    "end-timestamp": String(segment.endTimestampUs),
    "max-timestamp": String(segment.maxTimestampUs),
    "size": String(sizeBytes),
    "index-size": String(indexSizeBytes),
    "crc32": String(logCrc32),
    "format-version": segmentFormatVersion,
  };
}

/** The user metadata of a segment's `.index`, `.producers` and `.txnindex` objects. */
export function indexMetadata(indexCrc32: number): Record<string, string> {
  return { "crc32": String(indexCrc32), "format-version": segmentFormatVersion };
}

async function uploadInPieces(deps: UploadDeps, upload: OpenUpload): Promise<UploadOutcome> {
  const { segment, log, index, keys, deadlineAtMs } = upload;
  const sizeBytes = await log.sizeBytes();
  const indexSizeBytes = await index.sizeBytes();
  const logCrc32 = await hashFile(log, sizeBytes, deps.pieceBytes, deps.gate);
  const metadata = segmentMetadata(segment, sizeBytes, indexSizeBytes, logCrc32);
  await deps.bandwidth.take(sizeBytes + indexSizeBytes);
  const logResult = await putOnce(deps, keys.log, log, sizeBytes, logCrc32, metadata, deadlineAtMs);
  if (logResult !== "created" && logResult !== "same") return { kind: "anomaly", detail: logResult };
  const indexCrc32 = await hashFile(index, indexSizeBytes, deps.pieceBytes, deps.gate);
  const indexResult = await putOnce(
    deps,
    keys.index,
    index,
    indexSizeBytes,
    indexCrc32,
    indexMetadata(indexCrc32),
    deadlineAtMs,
  );
  // Indexes may legitimately differ (flush timing); an existing one with another checksum is kept.
  void indexResult;
  const sidecarSizeBytes =
    await uploadSidecar(deps, upload, upload.segment.producersPath, upload.keys.producers) +
    await uploadSidecar(deps, upload, upload.segment.txnIndexPath, upload.keys.txnindex);
  return {
    kind: "uploaded",
    logCrc32,
    sizeBytes,
    indexSizeBytes,
    sidecarSizeBytes,
    alreadyThere: logResult === "same",
  };
}

/**
 * Uploads one of the segment's sidecars (its producer snapshot, its aborted-transaction index), if
 * its file is there (a segment sealed without one goes without); returns its size. An object already
 * there with other bytes is kept, as an index is: each was taken from the same batches.
 */
async function uploadSidecar(
  deps: UploadDeps,
  upload: OpenUpload,
  path: string,
  key: string,
): Promise<number> {
  const file = await deps.disk.open(path, { readOnly: true }).catch((error) => {
    if (error instanceof DiskError && error.code === "not_found") return null;
    throw error;
  });
  if (file === null) return 0;
  try {
    const sizeBytes = await file.sizeBytes();
    await deps.bandwidth.take(sizeBytes);
    const crc32 = await hashFile(file, sizeBytes, deps.pieceBytes, deps.gate);
    await putOnce(deps, key, file, sizeBytes, crc32, indexMetadata(crc32), upload.deadlineAtMs);
    return sizeBytes;
  } finally {
    await file.close();
  }
}

async function putOnce(
  deps: UploadDeps,
  key: string,
  file: DiskFile,
  sizeBytes: number,
  checksum: number,
  metadata: Record<string, string>,
  deadlineAtMs: number,
): Promise<"created" | "same" | string> {
  try {
    await deps.store.put(key, () => pieces(file, sizeBytes, deps.pieceBytes, deps.gate), {
      sizeBytes,
      metadata,
      ifAbsent: true,
      crc32: checksum,
      deadlineAtMs,
    });
    return "created";
  } catch (error) {
    if (!(error instanceof PreconditionFailedError)) throw error;
    const head = await deps.store.head(key, { deadlineAtMs });
    if (head !== null && head.sizeBytes === sizeBytes && head.metadata["crc32"] === String(checksum)) {
      return "same";
    }
    return `object ${key} exists with size ${head?.sizeBytes} and CRC32 ${head?.metadata["crc32"]}, ` +
      `not ${sizeBytes} and ${checksum}`;
  }
}

/**
 * CRC32 of a file, one piece at a time on the gate's turns, read like the send pass into two
 * buffers in turn: the hash pass allocates nothing per piece, and each read overlaps a checksum.
 */
async function hashFile(
  file: DiskFile,
  sizeBytes: number,
  pieceBytes: number,
  gate: PieceGate | undefined,
): Promise<number> {
  const crc = new Crc32Stream();
  for await (const piece of pieces(file, sizeBytes, pieceBytes, gate)) crc.update(piece);
  return crc.digest();
}

/**
 * The pieces of a file for a PUT, read into two buffers in turn: the next piece is read while the
 * store works on this one (its checksum, its write or send), so the read's latency is hidden behind
 * the store's instead of added to it (docs/TUNING.md, "Upload read-ahead"). A piece is the store's
 * only until it pulls the next (the `BodySource` contract), which is when its buffer is read into
 * again, so the pass allocates nothing per piece and holds two pieces at most. With a gate, each
 * piece is handed over on the shard's turn, so the store's synchronous work on it (checksum, the
 * start of a write or a send) runs within it.
 */
async function* pieces(
  file: DiskFile,
  sizeBytes: number,
  pieceBytes: number,
  gate?: PieceGate,
): AsyncGenerator<Uint8Array> {
  const pieceLength = Math.max(1, Math.min(pieceBytes, sizeBytes));
  const buffers = [new Uint8Array(pieceLength), new Uint8Array(pieceLength)] as const;
  // Each read has a handler from its start: one that fails while the store works on the piece
  // before it must not be an unhandled rejection. Its failure is thrown where it is awaited.
  const readAt = (position: number, buffer: Uint8Array) => {
    const reading = readUpToInto(
      file,
      buffer.subarray(0, Math.min(buffer.length, sizeBytes - position)),
      position,
    );
    reading.catch(() => {}); // its failure is thrown where it is awaited, as said above
    return reading;
  };
  let at = 0;
  let turn = 0;
  let ahead: Promise<number> | null = sizeBytes > 0 ? readAt(0, buffers[0]) : null;
  try {
    while (ahead !== null) {
      const n = await ahead;
      ahead = null;
      if (n === 0) break;
      assert(n <= pieceLength, "Cannot hand over a piece: the read overran its buffer");
      const buffer = buffers[turn]!;
      turn ^= 1;
      if (at + n < sizeBytes) ahead = readAt(at + n, buffers[turn]!);
      if (gate !== undefined) await gate.turn();
      yield buffer.subarray(0, n);
      if (gate === undefined) await yieldToReactor();
      at += n;
    }
  } finally {
    // A store that stops pulling (an error, a deadline) leaves the read ahead running: it must end
    // before the caller closes the file, and its failure is the store's error's, not a second one.
    if (ahead !== null) await ahead.catch(() => 0);
  }
}
