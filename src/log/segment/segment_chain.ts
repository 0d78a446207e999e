import { RemoteTable } from "../remote/remote_table.ts";
import { assert } from "../../runtime/assert.ts";
import type { BufferPool } from "../../runtime/memory/buffers.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import { type MessageInput, prepareBatch, writeBatchInto } from "../batch/batch_codec.ts";
import {
  type RecordBatchHeader,
  setBaseOffset,
  setLeaderEpoch,
  stampLogAppendTime,
} from "../batch/record_batch.ts";
import { LeaderEpochs } from "../partition/leader_epochs.ts";
import { ProducerStates } from "../producers/producer_states.ts";
import { ProducerSnapshots, type RecoveredProducers } from "../producers/producer_snapshots.ts";
import { type AbortedTxn, AbortedTxnIndex, writeAbortedTxnIndexFile } from "../producers/aborted_txns.ts";
import { writeIndexFile } from "./sparse_index.ts";
import type { LogConfig } from "../log_config.ts";
import { localBytesOf } from "../retention/local_retention.ts";
import { Segment, WriteBuffer } from "./segment.ts";

/** One segment as a partition's stats describe it. */
export interface SegmentStats {
  startOffset: number;
  endOffset: number;
  sizeBytes: number;
  sealed: boolean;
  location: "local" | "uploaded" | "remote";
}

/** A partition log's extent and its segments, oldest first. */
export interface LogStats {
  firstOffset: number;
  nextOffset: number;
  sizeBytes: number;
  segments: SegmentStats[];
}

/** What an append writes: messages the log encodes as one batch, or Kafka record batches as sent. */
export type AppendInput =
  | {
    kind: "messages";
    messages: readonly MessageInput[];
    /** The topic keeps log append time: every message takes the server's time, whatever it says. */
    stampAppendTime: boolean;
  }
  | {
    kind: "batches";
    /** Validated batches (`validateRecordBatch`), each with its header. */
    batches: readonly { bytes: Uint8Array; header: RecordBatchHeader }[];
    /** The topic's `timestamp_type` is `log_append_time`: the server stamps each batch. */
    stampAppendTime: boolean;
  }
  | {
    kind: "replicated";
    /**
     * A leader's batches, validated, kept byte for byte (base offsets, epochs, timestamps): each
     * must start at the log's next offset.
     */
    batches: readonly { bytes: Uint8Array; header: RecordBatchHeader }[];
    /** Offsets at which the leader's segments start: the log rolls before a batch there. */
    segmentStarts: ReadonlySet<number>;
  };

export interface AppendResult {
  baseOffset: number;
  count: number;
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
  /**
   * The epoch of this replica's leadership, stamped on every batch it appends as leader; -1 (a
   * single node) leaves the batches' own.
   */
  leaderEpoch = -1;
  /** The epochs this log's batches were written under, and where each began. */
  epochs: LeaderEpochs;
  /** The markers of the chain's tiered segments, on disk. */
  readonly remoteTable: RemoteTable;
  /** The idempotent producers whose batches the chain holds: every placed batch updates them. */
  readonly producers: ProducerStates;
  /** Their snapshots on disk: one written at every roll. */
  readonly producerSnapshots: ProducerSnapshots;
  /** The last timestamp the server assigned (whole milliseconds, in µs); server stamps never decrease. */
  #lastStampUs: number;
  #sealedCount = 0;
  /** Bytes written to the active segment since its last fsync. */
  #dirty = false;
  #lastSyncMs: number;
  readonly #buffer = new WriteBuffer();
  /** The interval policy's fsync, run beside the writer loop; files are not closed under it. */
  #backgroundSync: Promise<void> | null = null;

  constructor(
    disk: Disk,
    dir: string,
    clock: Clock,
    segments: Segment[],
    epochs?: LeaderEpochs,
    remoteTable?: RemoteTable,
    producers?: RecoveredProducers,
  ) {
    assert(segments.length > 0, "a partition log needs at least its active segment");
    this.epochs = epochs ?? LeaderEpochs.empty(disk, dir);
    this.producers = producers?.states ?? new ProducerStates(dir);
    this.producerSnapshots = producers?.snapshots ?? new ProducerSnapshots(disk, dir);
    this.remoteTable = remoteTable ?? new RemoteTable(disk, dir, 0, 0);
    const active = segments.at(-1)!;
    assert(!active.sealed && active.logFile !== null, "the last segment must be open and active");
    this.#disk = disk;
    this.#dir = dir;
    this.#clock = clock;
    this.#segments = segments;
    this.#nextOffset = active.endOffset + 1;
    // A producer's timestamps may lie in the future; the server's own stamps resume from the newest
    // stored one only up to now.
    const storedMaxUs = segments.reduce((max, s) => Math.max(max, s.maxTimestampUs), 0);
    this.#lastStampUs = Math.min(storedMaxUs, Math.floor(clock.wallMs()) * 1000);
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
    segment.abortedTxns = new AbortedTxnIndex();
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

  /**
   * Appends at the end of the active segment, rolling it when it reaches its size: messages encoded
   * as one batch, or Kafka record batches (validated by the caller) kept as sent but for their base
   * offset and, stamped with log append time, their max timestamp and CRC.
   */
  async append(input: AppendInput, config: LogConfig): Promise<AppendResult> {
    // A new leader's first batch starts a segment: the one it filled as a follower ends where the old
    // leader's did, so that sealed segments (and their objects) are the same bytes on every replica.
    if (input.kind !== "replicated" && this.leaderEpoch > this.epochs.latestEpoch && !this.active.isEmpty) {
      await this.flushPending();
      await this.roll();
    }
    const baseOffset = this.#nextOffset;
    if (input.kind === "messages") {
      // Server-assigned timestamps never go backwards within a partition, even if the wall clock
      // does; they are whole milliseconds, as a batch holds them.
      const stampMs = this.#stampUs() / 1000;
      const messages = input.stampAppendTime
        ? input.messages.map((m) => ({ ...m, timestampMs: stampMs }))
        : input.messages;
      const batch = prepareBatch(messages, stampMs);
      const baseUs = batch.baseTimestampMs * 1000;
      const maxUs = batch.maxTimestampMs * 1000;
      await this.#place(batch.lengthBytes, messages.length, baseUs, maxUs, config, (target) => {
        writeBatchInto(target, this.#nextOffset, batch);
        if (this.leaderEpoch >= 0) this.#stampEpoch(target);
      });
    } else if (input.kind === "batches") {
      for (const { bytes, header } of input.batches) {
        const appendTimeUs = input.stampAppendTime ? this.#stampUs() : null;
        const baseUs = appendTimeUs ?? header.baseTimestampMs * 1000;
        const maxUs = appendTimeUs ?? header.maxTimestampMs * 1000;
        const aborted = this.#recordBatch(bytes, header, this.#nextOffset);
        await this.#place(bytes.length, header.recordCount, baseUs, maxUs, config, (target) => {
          target.set(bytes);
          setBaseOffset(target, this.#nextOffset);
          if (appendTimeUs !== null) stampLogAppendTime(target, appendTimeUs / 1000);
          if (this.leaderEpoch >= 0) this.#stampEpoch(target);
          // In the segment the marker is written to, before a roll that may follow it.
          if (aborted !== null) this.#indexAborted(aborted);
        });
      }
    } else {
      await this.#appendReplicated(input.batches, input.segmentStarts, config);
    }
    return { baseOffset, count: this.#nextOffset - baseOffset };
  }

  /**
   * A follower's append: the leader's batches as they are, each at the offset the leader gave it,
   * with a roll wherever the leader's segments start, so that sealed segments match the leader's
   * byte for byte. The follower never rolls by size on its own.
   */
  async #appendReplicated(
    batches: readonly { bytes: Uint8Array; header: RecordBatchHeader }[],
    segmentStarts: ReadonlySet<number>,
    config: LogConfig,
  ): Promise<void> {
    const unbounded = { ...config, segmentSizeBytes: Infinity };
    for (const { bytes, header } of batches) {
      assert(
        header.baseOffset === this.#nextOffset,
        `a replicated batch at ${header.baseOffset}, not ${this.#nextOffset}`,
      );
      if (segmentStarts.has(header.baseOffset) && !this.active.isEmpty) {
        await this.flushPending();
        await this.roll();
      }
      const baseUs = header.baseTimestampMs * 1000;
      const maxUs = header.maxTimestampMs * 1000;
      this.epochs.assign(header.partitionLeaderEpoch, header.baseOffset);
      const aborted = this.#recordBatch(bytes, header, header.baseOffset);
      await this.#place(bytes.length, header.recordCount, baseUs, maxUs, unbounded, (target) => {
        target.set(bytes);
        if (aborted !== null) this.#indexAborted(aborted);
      });
    }
  }

  /** A batch about to be placed at `offset`, to its producer's state: the abort its marker completes, if any. */
  #recordBatch(bytes: Uint8Array, header: RecordBatchHeader, offset: number): AbortedTxn | null {
    const completed = this.producers.recordBatch(bytes, header, offset);
    return completed === null ? null : this.producers.abortedEntryOf(completed);
  }

  /** An abort's marker is placed: its entry joins the active segment's aborted-transaction index. */
  #indexAborted(aborted: AbortedTxn): void {
    const active = this.active;
    assert(
      active.abortedTxns !== null && active.abortedTxns !== "none",
      "the active segment's aborted transactions are in memory",
    );
    assert(
      aborted.lastOffset >= active.startOffset,
      `the marker at ${aborted.lastOffset} is in the active segment`,
    );
    active.abortedTxns.add(aborted);
  }

  /** Stamps this leader's epoch on a batch about to be placed at the next offset. */
  #stampEpoch(batch: Uint8Array): void {
    setLeaderEpoch(batch, this.leaderEpoch);
    this.epochs.assign(this.leaderEpoch, this.#nextOffset);
  }

  /** After a truncation (`truncateSegments`): the chain ends at `offset`, in segment `keep`, active again. */
  cutTo(keep: number, offset: number): void {
    assert(keep >= 0 && keep < this.#segments.length, `Cannot cut the chain at segment ${keep}`);
    this.#segments.length = keep + 1;
    this.#nextOffset = offset;
    this.producers.truncateFrom(offset);
    this.#dirty = false;
  }

  /** The offset the next append starts at, counting writes not yet visible. */
  get pendingNextOffset(): number {
    return this.#nextOffset;
  }

  /** The next server-assigned timestamp: now in whole milliseconds, never before the last one. */
  #stampUs(): number {
    this.#lastStampUs = Math.max(this.#lastStampUs, Math.floor(this.#clock.wallMs()) * 1000);
    return this.#lastStampUs;
  }

  /**
   * Writes one batch of `lengthBytes` (by `write`, into the write buffer) at the next offset, and
   * accounts for it: the segment's end, its first and largest timestamp, its sparse index (whose
   * entries hold the largest timestamp so far, so that they never decrease), and the roll.
   */
  async #place(
    lengthBytes: number,
    count: number,
    baseTimestampUs: number,
    maxTimestampUs: number,
    config: LogConfig,
    write: (target: Uint8Array) => void,
  ): Promise<void> {
    assert(count >= 1 && maxTimestampUs >= baseTimestampUs, "a batch has records and ordered timestamps");
    const segment = this.active;
    const baseOffset = this.#nextOffset;
    const position = segment.sizeBytes;
    // Batches of one group are written together, one write per write buffer, not one per batch.
    if (this.#buffer.wouldOverflow(lengthBytes)) await this.flushPending();
    write(this.#buffer.space(lengthBytes, position));
    this.#buffer.filled(lengthBytes);
    segment.sizeBytes += lengthBytes;
    segment.endOffset = baseOffset + count - 1;
    segment.firstTimestampUs ??= baseTimestampUs;
    segment.maxTimestampUs = Math.max(segment.maxTimestampUs, maxTimestampUs);
    this.#nextOffset += count;
    this.#dirty = true;
    // The active segment's index lives in memory and is written at seal and close; boot rebuilds
    // it from the log anyway, so writing it per batch would buy nothing.
    if (
      segment.lastIndexedPosition < 0 ||
      position - segment.lastIndexedPosition >= config.indexIntervalBytes
    ) {
      const relativeOffset = baseOffset - segment.startOffset;
      segment.localIndex.add({ relativeOffset, position, timestampUs: segment.maxTimestampUs });
      segment.lastIndexedPosition = position;
    }
    if (segment.sizeBytes >= config.segmentSizeBytes) {
      await this.flushPending();
      await this.roll();
    }
  }

  /** Writes what the write buffer holds to the active segment. */
  flushPending(): Promise<void> {
    return this.#buffer.flush(() => this.active.logFile!);
  }

  /**
   * Seals the active segment (its bytes and its `.index` made durable first), writes the producer
   * snapshot where the next starts, and opens the next, whose creation syncs the directory and with
   * it the names of the new `.index` and snapshot.
   */
  async roll(): Promise<void> {
    const sealing = this.active;
    await this.#backgroundSync;
    await sealing.logFile!.sync();
    // Before the `.index`: a segment whose `.index` was written has its `.txnindex` too, if it holds an abort.
    const aborted = sealing.abortedTxns;
    assert(aborted !== null && aborted !== "none", "the active segment's aborted transactions are in memory");
    if (aborted.entries.length > 0) await writeAbortedTxnIndexFile(this.#disk, sealing.txnIndexPath, aborted);
    await writeIndexFile(this.#disk, sealing.indexPath, sealing.localIndex);
    sealing.sealed = true;
    this.#sealedCount++;
    await closeFiles(sealing);
    this.#dirty = false;
    this.#lastSyncMs = this.#clock.nowMs();
    // The producers' state where the next segment starts, durable before the segment exists: a boot
    // finds it beside the active segment and replays that segment's batches only.
    await this.producerSnapshots.write(this.#nextOffset, this.producers.snapshot());
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

  /**
   * Puts `replacing` in the place of the `count` segments from the `first`th: remote segments a
   * replace of remote segments took out (`replaceRemoteSegments`), covering the same offsets.
   */
  replaceRange(first: number, count: number, replacing: readonly Segment[]): void {
    const out = this.#segments.slice(first, first + count);
    assert(
      count > 0 && out.length === count && first + count < this.#segments.length && replacing.length > 0,
      `Cannot replace ${count} segments from the ${first}th of ${this.#segments.length}`,
    );
    assert(
      out[0]!.startOffset === replacing[0]!.startOffset &&
        out.at(-1)!.endOffset === replacing.at(-1)!.endOffset,
      "a replace covers the offsets of the segments it takes out",
    );
    this.#segments.splice(first, count, ...replacing);
  }

  /** Takes every segment out of the chain, for a purge; `restart` gives it a new active segment. */
  takeAll(): Segment[] {
    const all = this.#segments;
    this.#segments = [];
    return all;
  }

  /** After a purge (or a read replica's planting): the chain is `before`, then `active` after them. */
  restart(active: Segment, before: Segment[] = []): void {
    const start = (before.at(-1)?.endOffset ?? -1) + 1;
    assert(this.#segments.length === 0 && active.startOffset === start, "a chain restarts where it ends");
    this.#segments = [...before, active];
    this.#nextOffset = start;
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
