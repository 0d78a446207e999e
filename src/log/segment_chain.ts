import { assert } from "../runtime/assert.ts";
import type { BufferPool } from "../runtime/buffer_pool.ts";
import type { Clock } from "../runtime/clock.ts";
import type { Disk } from "../runtime/disk.ts";
import { type MessageInput, prepareBatch, writeBatchInto } from "./batch_codec.ts";
import { writeIndexFile } from "./index_file.ts";
import type { LogConfig } from "./log_config.ts";
import { localBytesOf } from "./local_retention.ts";
import { Segment } from "./segment.ts";
import { WriteBuffer } from "./write_buffer.ts";

export interface AppendResult {
  baseOffset: number;
  count: number;
}

export interface SegmentStats {
  startOffset: number;
  endOffset: number;
  sizeBytes: number;
  sealed: boolean;
  location: "local" | "uploaded" | "remote";
}

export interface LogStats {
  firstOffset: number;
  nextOffset: number;
  sizeBytes: number;
  segments: SegmentStats[];
}

/**
 * A partition's segments, oldest first, the last one active (open, growing): appends encode into
 * the write buffer and grow the active segment, a roll seals it and opens the next, and what is
 * written becomes visible to readers only when `publishVisible` says so (after the group commit).
 * Only the writer loop changes the chain, except the interval policy's fsync, which runs beside it.
 */
export class SegmentChain {
  readonly #disk: Disk;
  readonly #dir: string;
  readonly #clock: Clock;
  #segments: Segment[];
  #nextOffset: number;
  #lastTimestampUs: number;
  #sealedCount = 0;
  /** Bytes written to the active segment since its last fsync. */
  #dirty = false;
  #lastSyncMs: number;
  readonly #buffer = new WriteBuffer();
  /** The interval policy's fsync, run beside the writer loop; files are not closed under it. */
  #backgroundSync: Promise<void> | null = null;

  constructor(disk: Disk, dir: string, clock: Clock, segments: Segment[]) {
    assert(segments.length > 0, "a partition log needs at least its active segment");
    const active = segments.at(-1)!;
    assert(!active.sealed && active.logFile !== null, "the last segment must be open and active");
    this.#disk = disk;
    this.#dir = dir;
    this.#clock = clock;
    this.#segments = segments;
    this.#nextOffset = active.endOffset + 1;
    this.#lastTimestampUs = Math.max(0, ...segments.map((s) => s.maxTimestampUs));
    this.#lastSyncMs = clock.nowMs();
  }

  /**
   * Creates the `.log` of an empty active segment at `startOffset` and makes it durable. It is
   * `reopenable`: a disk that bounds its open files may close it between uses. An active segment has
   * no `.index` file: its index lives in memory, is rebuilt from the `.log` at boot, and is written
   * whole at the seal.
   */
  static async createSegment(disk: Disk, dir: string, startOffset: number): Promise<Segment> {
    const segment = new Segment(dir, startOffset);
    segment.logFile = await disk.createExclusive(segment.logPath, { reopenable: true });
    await disk.fsyncDir(dir);
    return segment;
  }

  get segments(): readonly Segment[] {
    return this.#segments;
  }

  get active(): Segment {
    return this.#segments.at(-1)!;
  }

  /** Grows by one at every seal. */
  get sealedCount(): number {
    return this.#sealedCount;
  }

  get dirty(): boolean {
    return this.#dirty;
  }

  get lastSyncMs(): number {
    return this.#lastSyncMs;
  }

  /** The interval policy's fsync while it runs, else null. */
  get backgroundSync(): Promise<void> | null {
    return this.#backgroundSync;
  }

  useWriteBuffers(pool: BufferPool): void {
    this.#buffer.usePool(pool);
  }

  /** The offset after the last visible (acknowledged) message. */
  visibleNextOffset(): number {
    return this.active.visibleEndOffset + 1;
  }

  /** Bytes of the segments whose `.log` is on local disk (local or uploaded). */
  localBytes(): number {
    return localBytesOf(this.#segments);
  }

  /** Encodes a batch at the end of the active segment, rolling it when it reaches its size. */
  async append(messages: readonly MessageInput[], config: LogConfig): Promise<AppendResult> {
    const segment = this.active;
    const baseOffset = this.#nextOffset;
    // Server-assigned timestamps never go backwards within a partition, even if the wall clock does;
    // they are whole milliseconds, as a batch holds them.
    const timestampUs = Math.max(this.#lastTimestampUs, Math.floor(this.#clock.wallMs()) * 1000);
    const batch = prepareBatch(messages);
    const position = segment.sizeBytes;
    // Batches of one group are written together, one write per write buffer, not one per batch.
    if (this.#buffer.wouldOverflow(batch.lengthBytes)) await this.flushPending();
    writeBatchInto(this.#buffer.space(batch.lengthBytes, position), baseOffset, timestampUs, batch);
    this.#buffer.filled(batch.lengthBytes);
    segment.sizeBytes += batch.lengthBytes;
    segment.endOffset = baseOffset + messages.length - 1;
    segment.firstTimestampUs ??= timestampUs;
    segment.maxTimestampUs = timestampUs;
    this.#nextOffset += messages.length;
    this.#lastTimestampUs = timestampUs;
    this.#dirty = true;
    // The active segment's index lives in memory and is written at seal and close; boot rebuilds
    // it from the log anyway, so writing it per batch would buy nothing.
    if (
      segment.lastIndexedPosition < 0 ||
      position - segment.lastIndexedPosition >= config.indexIntervalBytes
    ) {
      segment.index.add({ relativeOffset: baseOffset - segment.startOffset, position, timestampUs });
      segment.lastIndexedPosition = position;
    }
    if (segment.sizeBytes >= config.segmentSizeBytes) {
      await this.flushPending();
      await this.roll();
    }
    return { baseOffset, count: messages.length };
  }

  /** Writes what the write buffer holds to the active segment. */
  flushPending(): Promise<void> {
    return this.#buffer.flush(() => this.active.logFile!);
  }

  /**
   * Seals the active segment (its bytes and its `.index` made durable first) and opens the next,
   * whose creation syncs the directory and with it the new `.index`'s name.
   */
  async roll(): Promise<void> {
    const sealing = this.active;
    await this.#backgroundSync;
    await sealing.logFile!.sync();
    await writeIndexFile(this.#disk, sealing.indexPath, sealing.index.entries());
    sealing.sealed = true;
    this.#sealedCount++;
    await closeFiles(sealing);
    this.#dirty = false;
    this.#lastSyncMs = this.#clock.nowMs();
    this.#segments.push(await SegmentChain.createSegment(this.#disk, this.#dir, this.#nextOffset));
  }

  async syncActive(): Promise<void> {
    await this.active.logFile!.sync();
    this.#dirty = false;
    this.#lastSyncMs = this.#clock.nowMs();
  }

  /**
   * Under the interval policy no acknowledgement waits for the fsync, so it runs beside the
   * writer loop instead of holding it; it covers every byte written before it started. A failure
   * goes to `onFailure`.
   */
  startBackgroundSync(onFailure: (error: Error) => void): void {
    if (this.#backgroundSync !== null || !this.#dirty) return;
    const file = this.active.logFile!;
    this.#dirty = false;
    this.#lastSyncMs = this.#clock.nowMs();
    this.#backgroundSync = file.sync()
      .catch(onFailure)
      .finally(() => (this.#backgroundSync = null));
  }

  /** Makes what was written visible to readers: every segment from the back to the last one done. */
  publishVisible(): void {
    for (let i = this.#segments.length - 1; i >= 0; i--) {
      const s = this.#segments[i]!;
      if (s.visibleSizeBytes === s.sizeBytes && s.visibleEndOffset === s.endOffset && s.sealed) break;
      s.visibleSizeBytes = s.sizeBytes;
      s.visibleEndOffset = s.endOffset;
    }
  }

  /** Takes the oldest segment out of the chain (its files are the caller's to delete). */
  shiftFront(): Segment {
    assert(this.#segments.length > 1, "the active segment never leaves the chain");
    return this.#segments.shift()!;
  }

  /** Takes every segment out of the chain, for a purge; `restart` gives it a new active segment. */
  takeAll(): Segment[] {
    const all = this.#segments;
    this.#segments = [];
    return all;
  }

  /** After a purge: the chain starts again at offset 0 with `active`. */
  restart(active: Segment): void {
    assert(this.#segments.length === 0 && active.startOffset === 0, "a purged chain restarts at offset 0");
    this.#segments = [active];
    this.#nextOffset = 0;
    this.#dirty = false;
  }

  stats(): LogStats {
    const segments = this.#segments.map((s) => ({
      startOffset: s.startOffset,
      endOffset: s.visibleEndOffset,
      sizeBytes: s.visibleSizeBytes,
      sealed: s.sealed,
      location: s.location,
    }));
    return {
      firstOffset: this.#segments[0]!.startOffset,
      nextOffset: this.visibleNextOffset(),
      sizeBytes: segments.reduce((sum, s) => sum + s.sizeBytes, 0),
      segments,
    };
  }

  /**
   * Once `writerDone` (the writer loop's last group) ends: syncs what is dirty unless a write
   * `failed`, then closes the files. The active segment's index is not written: boot rebuilds it.
   */
  async close(writerDone: Promise<void> | null, failed: () => boolean): Promise<void> {
    await writerDone;
    await this.#backgroundSync;
    if (!failed() && this.#dirty) await this.active.logFile!.sync();
    for (const s of this.#segments) await closeFiles(s);
  }
}

/** Closes a segment's open handle, if any. */
export async function closeFiles(segment: Segment): Promise<void> {
  await segment.logFile?.close();
  segment.logFile = null;
}
