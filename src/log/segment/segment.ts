import type { AbortedTxnIndex } from "../producers/aborted_txns.ts";
import type { DiskFile } from "../../runtime/disk/disk.ts";
import type { MarkerIdentity, RemoteMarker } from "../remote/remote_marker.ts";
import { SparseIndex } from "./sparse_index.ts";
import { assert } from "../../runtime/assert.ts";
import type { BufferPool } from "../../runtime/memory/buffers.ts";

/**
 * Where a segment's bytes are: only on local disk, in both places (uploaded: its marker in the remote
 * table and its `.log`), or only in the object store (the `.log` evicted; the marker and `.index`
 * remain).
 */
export type SegmentLocation = "local" | "uploaded" | "remote";

/** The zero-padded stem shared by a segment's files and, later, its object keys. */
export function segmentStem(startOffset: number): string {
  return String(startOffset).padStart(20, "0");
}

/**
 * The stem of a segment's objects and of a remote segment's `.index`: its start offset's stem, and
 * for a merged segment (`mergedEndOffset` not null) its end offset's after a hyphen, so that a
 * merge's files and objects never share a name with the segments it replaces, and uploading them
 * again writes the same keys (docs/DESIGN.md, "The adjacent-segment merger").
 */
export function objectStem(startOffset: number, mergedEndOffset: number | null): string {
  const start = segmentStem(startOffset);
  return mergedEndOffset === null ? start : `${start}-${segmentStem(mergedEndOffset)}`;
}

/**
 * One segment of a partition's log: `{stem}.log` (batches), `{stem}.index` (sparse index) and,
 * when it holds an aborted transaction's marker, `{stem}.txnindex` (`AbortedTxnIndex`).
 * The active segment holds its files (opened `reopenable`: a disk bounding its open files closes
 * them between uses and reopens them on the next) and grows; a sealed one is immutable. `visibleSizeBytes` is
 * how far readers may go: the bytes of acknowledged batches.
 */
export class Segment {
  readonly dir: string;
  readonly startOffset: number;
  /**
   * The sparse index of a segment with a local `.log`, in memory; null for a remote one, whose index
   * is loaded on demand into the shard's bounded index cache (`RemoteReader.index`), so that what a
   * node holds does not grow with what its bucket holds.
   */
  index: SparseIndex | null;
  /** Last offset in the segment; `startOffset - 1` while it is empty. */
  endOffset: number;
  sizeBytes: number;
  visibleSizeBytes: number;
  visibleEndOffset: number;
  sealed: boolean;
  /** Base timestamp of the first batch, for the age roll; null while empty. */
  firstTimestampUs: number | null;
  maxTimestampUs: number;
  /** Position of the last index entry's batch, for the index interval. */
  lastIndexedPosition: number;
  location: SegmentLocation = "local";
  logFile: DiskFile | null = null;
  /**
   * The aborted transactions whose markers the segment holds (its `.txnindex`): the active
   * segment's in memory, and a local sealed one's once read; "none" when it is known to hold none
   * (no file); null while unknown (read from its file on demand).
   */
  abortedTxns: AbortedTxnIndex | "none" | null = null;
  /**
   * The marker's facts beyond the segment's own bounds, size and timestamps, held apart rather than
   * as a marker object, so that a remote segment costs as little as can be (docs/DESIGN.md, "Cost
   * follows what is local"). The identity is null while the segment has no marker.
   */
  #markerIdentity: MarkerIdentity | null = null;
  #indexSizeBytes = 0;
  /** The CRC32 as a signed 32-bit integer, which the engine holds unboxed. */
  #logCrc32Signed = 0;
  /** The marker's end timestamp less the segment's largest: zero as markers are written. */
  #endTimestampDeltaUs = 0;
  /** A merged segment's marker says so (`RemoteMarker.merged`). */
  #merged = false;

  constructor(dir: string, startOffset: number, index: SparseIndex | null = new SparseIndex()) {
    this.dir = dir;
    this.startOffset = startOffset;
    this.index = index;
    this.endOffset = startOffset - 1;
    this.sizeBytes = 0;
    this.visibleSizeBytes = 0;
    this.visibleEndOffset = startOffset - 1;
    this.sealed = false;
    this.firstTimestampUs = null;
    this.maxTimestampUs = 0;
    this.lastIndexedPosition = -1;
  }

  /**
   * The segment's marker (in the remote table) when it has one: uploaded or remote. Its bounds,
   * size and timestamps are the segment's own; setting one whose bounds or size are not is a bug.
   */
  get marker(): RemoteMarker | null {
    const identity = this.#markerIdentity;
    if (identity === null) return null;
    return {
      startOffset: this.startOffset,
      endOffset: this.endOffset,
      sizeBytes: this.sizeBytes,
      indexSizeBytes: this.#indexSizeBytes,
      startTimestampUs: this.firstTimestampUs ?? this.maxTimestampUs,
      endTimestampUs: this.maxTimestampUs + this.#endTimestampDeltaUs,
      maxTimestampUs: this.maxTimestampUs,
      createdRevision: identity.createdRevision,
      purgeGeneration: identity.purgeGeneration,
      logCrc32: this.#logCrc32Signed >>> 0,
      merged: this.#merged,
    };
  }

  set marker(m: RemoteMarker | null) {
    if (m === null) {
      this.#markerIdentity = null;
      this.#merged = false;
      return;
    }
    assert(
      m.startOffset === this.startOffset && m.endOffset === this.endOffset && m.sizeBytes === this.sizeBytes,
      `Cannot give segment ${this.stem} (${this.startOffset}..${this.endOffset}, ${this.sizeBytes} bytes) the marker of ` +
        `${m.startOffset}..${m.endOffset}, ${m.sizeBytes} bytes`,
    );
    this.#markerIdentity = sharedIdentity(m);
    this.#indexSizeBytes = m.indexSizeBytes;
    this.#logCrc32Signed = m.logCrc32 | 0;
    this.#endTimestampDeltaUs = m.endTimestampUs - this.maxTimestampUs;
    this.#merged = m.merged;
  }

  /** The end offset in the names of a merged segment's objects and `.index`; null for any other. */
  get mergedEndOffset(): number | null {
    return this.#markerIdentity !== null && this.#merged ? this.endOffset : null;
  }

  /** The index of a segment whose `.log` is local: every such segment holds its index in memory. */
  get localIndex(): SparseIndex {
    assert(this.index !== null, `Cannot use the index of segment ${this.stem}: it is remote, not in memory`);
    return this.index;
  }

  get stem(): string {
    return segmentStem(this.startOffset);
  }

  get logPath(): string {
    return `${this.dir}/${this.stem}.log`;
  }

  /** `{stem}.index`, or for a merged segment `{start}-{end}.index` (`objectStem`). */
  get indexPath(): string {
    return `${this.dir}/${objectStem(this.startOffset, this.mergedEndOffset)}.index`;
  }

  /** The aborted-transaction index, written at the seal when the segment holds an abort's marker. */
  get txnIndexPath(): string {
    return `${this.dir}/${objectStem(this.startOffset, this.mergedEndOffset)}.txnindex`;
  }

  /** Whether a `.txnindex` file may exist: unknown, or an index with entries. */
  get mayHaveTxnIndexFile(): boolean {
    const index = this.abortedTxns;
    return index === null || (index !== "none" && index.entries.length > 0);
  }

  get isEmpty(): boolean {
    return this.endOffset < this.startOffset;
  }
}

/** A segment held only in the store, as its marker describes it. */
export function remoteSegmentOf(dir: string, m: RemoteMarker): Segment {
  const segment = new Segment(dir, m.startOffset, null);
  segment.sizeBytes = m.sizeBytes;
  segment.endOffset = m.endOffset;
  segment.firstTimestampUs = m.startTimestampUs;
  segment.maxTimestampUs = m.maxTimestampUs;
  segment.sealed = true;
  segment.marker = m;
  segment.location = "remote";
  segment.visibleSizeBytes = m.sizeBytes;
  segment.visibleEndOffset = m.endOffset;
  return segment;
}

/** The identity last given to a marker: a partition's segments share one object rather than one each. */
let lastIdentity: MarkerIdentity = { createdRevision: "", purgeGeneration: -1 };

function sharedIdentity(m: MarkerIdentity): MarkerIdentity {
  if (
    m.createdRevision !== lastIdentity.createdRevision || m.purgeGeneration !== lastIdentity.purgeGeneration
  ) {
    lastIdentity = { createdRevision: m.createdRevision, purgeGeneration: m.purgeGeneration };
  }
  return lastIdentity;
}

/**
 * The bytes of the active segment encoded and not yet written. Batches are encoded straight into a
 * write buffer, borrowed from the shard's pool for one write and given back once it is written:
 * `#pendingBytes` of it are not yet written, and go at `#pendingPosition` in the active segment.
 */
export class WriteBuffer {
  #pool: BufferPool | null = null;
  #pending: Uint8Array | null = null;
  #pendingBytes = 0;
  #pendingPosition = 0;

  /**
   * Without a pool each batch is encoded into a buffer of its own and written alone; with one, a
   * group's batches share one buffer and one write, and a produce allocates nothing for its batch.
   */
  usePool(pool: BufferPool): void {
    assert(this.#pending === null, "Cannot change write buffers with a write pending");
    this.#pool = pool;
  }

  /** Whether a batch of `lengthBytes` would not fit in what the pending buffer has left. */
  wouldOverflow(lengthBytes: number): boolean {
    return this.#pending !== null && this.#pendingBytes + lengthBytes > this.#pending.length;
  }

  /**
   * Room for `lengthBytes` more at `position` in the segment; the caller has written the pending
   * bytes out if the batch did not fit. A batch larger than a pooled buffer gets a buffer of its
   * own, never pooled. `filled` then counts the bytes encoded into it.
   */
  space(lengthBytes: number, position: number): Uint8Array {
    if (this.#pending === null) {
      // With every pooled buffer out (more partitions writing at once than the pool keeps), the batch
      // gets a buffer of its own size, as it would have without a pool, rather than a new 1 MiB one.
      const pool = this.#pool;
      const pooled = pool !== null && lengthBytes <= pool.bufferBytes
        ? pool.takeBounded(pool.bufferBytes)
        : null;
      this.#pending = pooled ?? new Uint8Array(lengthBytes);
      this.#pendingBytes = 0;
      this.#pendingPosition = position;
    }
    assert(
      this.#pendingPosition + this.#pendingBytes === position &&
        this.#pendingBytes + lengthBytes <= this.#pending.length,
      "pending bytes must end where the segment does, with room for the batch",
    );
    return this.#pending.subarray(this.#pendingBytes, this.#pendingBytes + lengthBytes);
  }

  /** Counts `lengthBytes` encoded into the room `space` gave. */
  filled(lengthBytes: number): void {
    this.#pendingBytes += lengthBytes;
  }

  /**
   * Writes the pending bytes to the file `target` names (the active segment's `.log`), then gives
   * the buffer back: nothing refers to it after the write.
   */
  async flush(target: () => DiskFile): Promise<void> {
    const buffer = this.#pending;
    if (buffer === null) return;
    const bytes = buffer.subarray(0, this.#pendingBytes);
    const position = this.#pendingPosition;
    this.#pending = null;
    this.#pendingBytes = 0;
    try {
      await target().writeAt(bytes, position);
    } finally {
      this.#pool?.give(buffer);
    }
  }
}
