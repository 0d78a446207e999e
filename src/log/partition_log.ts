import type { IndexEntry } from "./sparse_index.ts";
import type { PieceGate } from "../runtime/piece_gate.ts";
import type { BufferPool } from "../runtime/buffer_pool.ts";
import { assert } from "../runtime/assert.ts";
import type { Clock } from "../runtime/clock.ts";
import { type Disk, DiskError } from "../runtime/disk.ts";
import {
  type BatchHeader,
  decodeBatchHeader,
  decodeMessages,
  isPlausibleHeader,
  type MessageInput,
  prepareBatch,
  type StoredMessage,
  verifyBatch,
  writeBatchInto,
} from "./batch_codec.ts";
import {
  type RemoteChunk,
  RemoteCorruptError,
  type RemoteReader,
  RemoteSegmentRetiredError,
} from "./remote_reader.ts";
import { groupOpsMax, type LogConfig, retentionSegmentsPerPassMax } from "./log_config.ts";
import { PartitionUnavailableError, RemoteReadUnavailableError, WriteQueueFullError } from "./log_errors.ts";
import { encodeRemoteMarker, type RemoteMarker } from "./remote_marker.ts";
import { writeWholeFile } from "../runtime/write_whole_file.ts";
import { Crc32Stream } from "../runtime/crc32.ts";
import { yieldToReactor } from "../runtime/yield_to_reactor.ts";
import { readExactly, scanBatches } from "./scan_batches.ts";
import { Segment } from "./segment.ts";
import { decodeIndexEntries, encodeIndexEntries, indexEntryBytes } from "./sparse_index.ts";

export interface AppendResult {
  baseOffset: number;
  count: number;
}

export interface ReadResult {
  messages: StoredMessage[];
  nextOffset: number;
  /**
   * Gives back the remote windows the messages are views into: call it once the messages are
   * encoded and nothing reads them any more (the HTTP route does), or never; twice is harmless.
   */
  release(): void;
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

/** Decides, for the oldest sealed segment, whether total retention removes it. */
export type RetentionDecision = (segment: Segment, retainedBytes: number) => boolean;

interface Deferred<T> {
  resolve: (value: T) => void;
  reject: (error: Error) => void;
}

/** Whether the local envelope (`local_retention_age` / `local_retention_size`) still wants a segment. */
export type KeepLocal = (segment: Segment, localBytes: number) => boolean;

/** Identity a marker must carry: the partition's incarnation. */
export interface MarkerIdentity {
  createdRevision: string;
  purgeGeneration: number;
}

/** Segments one eviction pass evicts at most, as the RFC's per-pass budget. */
export const evictionSegmentsPerPassMax = 16;

type WriteOp =
  | { kind: "append"; messages: readonly MessageInput[]; done: Deferred<AppendResult> }
  | { kind: "roll"; done: Deferred<void> }
  | { kind: "sync"; done: Deferred<void> }
  | { kind: "retention"; decide: RetentionDecision; done: Deferred<number> }
  | { kind: "purge"; commit: () => Promise<void>; done: Deferred<void> }
  | {
    kind: "evict";
    victims: Map<number, number>;
    floor: number;
    identity: MarkerIdentity;
    keepLocal: KeepLocal;
    done: Deferred<number>;
  };

/**
 * A partition's segmented log. Every change goes through one writer loop, which takes up to
 * `groupOpsMax` queued operations at a time, writes them, makes them durable with one fsync when
 * the policy is "always" (group commit), and only then makes them visible to readers and
 * acknowledges them. Reads snapshot the segment list and never see unacknowledged bytes.
 */
export class PartitionLog {
  readonly label: string;
  readonly #disk: Disk;
  readonly #dir: string;
  readonly #clock: Clock;
  #config: LogConfig;
  #segments: Segment[];
  #nextOffset: number;
  #lastTimestampUs: number;
  #queue: WriteOp[] = [];
  #running: Promise<void> | null = null;
  #dirty = false;
  #lastSyncMs: number;
  #failure: Error | null = null;
  #remote: RemoteReader | null = null;
  /** The piece gate: walking a remote chunk waits for a turn (absent in some tests). */
  #gate: PieceGate | null = null;
  #sealedCount = 0;
  #closed = false;
  /**
   * Batches are encoded straight into a write buffer, borrowed from the shard's pool for one write
   * and given back once it is written: `#pendingBytes` of it are not yet written, and go at
   * `#pendingPosition` in the active segment.
   */
  #writeBuffers: BufferPool | null = null;
  #pending: Uint8Array | null = null;
  #pendingBytes = 0;
  #pendingPosition = 0;
  /** The interval policy's fsync, run beside the writer loop; files are not closed under it. */
  #backgroundSync: Promise<void> | null = null;

  constructor(disk: Disk, dir: string, clock: Clock, config: LogConfig, segments: Segment[], label: string) {
    assert(segments.length > 0, "a partition log needs at least its active segment");
    const active = segments.at(-1)!;
    assert(!active.sealed && active.logFile !== null, "the last segment must be open and active");
    this.#disk = disk;
    this.#dir = dir;
    this.#clock = clock;
    this.#config = config;
    this.#segments = segments;
    this.#nextOffset = active.endOffset + 1;
    this.#lastTimestampUs = Math.max(0, ...segments.map((s) => s.maxTimestampUs));
    this.#lastSyncMs = clock.nowMs();
    this.label = label;
  }

  /** Creates the files of an empty active segment at `startOffset` and makes them durable. */
  static async createSegment(disk: Disk, dir: string, startOffset: number): Promise<Segment> {
    const segment = new Segment(dir, startOffset);
    segment.logFile = await disk.createExclusive(segment.logPath);
    segment.indexFile = await disk.createExclusive(segment.indexPath);
    await disk.fsyncDir(dir);
    return segment;
  }

  get config(): LogConfig {
    return this.#config;
  }

  /** Topic options may change at run time; they apply from the next write or tick. */
  updateConfig(config: LogConfig): void {
    this.#config = config;
  }

  get nextOffset(): number {
    return this.#visibleNextOffset();
  }

  /**
   * Lends the log its write buffers. Without a pool each batch is encoded into a buffer of its own
   * and written alone; with one, a group's batches share one buffer and one write, and a produce
   * allocates nothing for its batch.
   */
  useWriteBuffers(pool: BufferPool): void {
    assert(this.#pending === null, "Cannot change write buffers with a write pending");
    this.#writeBuffers = pool;
  }

  /** Reads of evicted segments go through this once the tier service attaches its cache. */
  attachRemoteReader(reader: RemoteReader, gate?: PieceGate): void {
    this.#remote = reader;
    this.#gate = gate ?? null;
  }

  /** Grows by one at every seal: the tier service's cue to look for new work. */
  get sealedCount(): number {
    return this.#sealedCount;
  }

  get segments(): readonly Segment[] {
    return this.#segments;
  }

  append(messages: readonly MessageInput[]): Promise<AppendResult> {
    assert(messages.length > 0, "Cannot append an empty batch");
    return this.#enqueue<AppendResult>((done) => ({ kind: "append", messages, done }));
  }

  /** Called from the shard's tick: rolls an aged active segment and runs the interval fsync. */
  onTick(nowMs: number): void {
    if (this.#failure !== null || this.#closed) return;
    const active = this.#segments.at(-1)!;
    const maxAgeMs = this.#config.segmentMaxAgeMs;
    const wallUs = this.#clock.wallMs() * 1000;
    if (
      maxAgeMs !== null && active.firstTimestampUs !== null &&
      wallUs - active.firstTimestampUs >= maxAgeMs * 1000
    ) {
      if (!this.#queue.some((op) => op.kind === "roll")) {
        this.#enqueue<void>((done) => ({ kind: "roll", done })).catch(() => {});
      }
    }
    if (
      this.#config.fsync === "interval" && this.#dirty &&
      nowMs - this.#lastSyncMs >= this.#config.fsyncIntervalMs
    ) {
      if (!this.#queue.some((op) => op.kind === "sync")) {
        this.#enqueue<void>((done) => ({ kind: "sync", done })).catch(() => {});
      }
    }
  }

  /** Deletes the oldest sealed segments `decide` selects, at most 16 per pass; never the active one. */
  enforceRetention(decide: RetentionDecision): Promise<number> {
    return this.#enqueue<number>((done) => ({ kind: "retention", decide, done }));
  }

  /**
   * Local eviction: walks sealed segments from the front and stops at the first that is active,
   * not below the tiered floor (exclusive), or still wanted by the local envelope; at most 16 per
   * pass. Each victim's `.log` checksum comes from `knownLogCrc32` or is computed first, outside
   * the writer loop, piece by piece; then,
   * inside it, in this order: the 128-byte `.remote` marker is written and fsynced, the directory
   * fsynced, the `.log` unlinked, the directory fsynced. The `.index` stays; totals still count it.
   */
  async evictLocal(
    floor: number,
    identity: MarkerIdentity,
    keepLocal: KeepLocal,
    knownLogCrc32: (startOffset: number) => number | undefined = () => undefined,
  ): Promise<number> {
    const victims = new Map<number, number>();
    let localBytes = this.#localBytes();
    for (const segment of this.#segments) {
      if (victims.size >= evictionSegmentsPerPassMax || !segment.sealed || segment.endOffset >= floor) break;
      if (segment.location === "remote") continue;
      if (keepLocal(segment, localBytes)) break;
      // The uploader already hashed the .log; only an unknown checksum (after a restart) is read again.
      victims.set(
        segment.startOffset,
        knownLogCrc32(segment.startOffset) ?? await hashLog(this.#disk, segment),
      );
      localBytes -= segment.sizeBytes;
    }
    if (victims.size === 0) return 0;
    return await this.#enqueue<number>((done) => ({
      kind: "evict",
      victims,
      floor,
      identity,
      keepLocal,
      done,
    }));
  }

  /** Deletes every segment and starts again at offset 0; `commit` runs before anything is acknowledged. */
  purge(commit: () => Promise<void>): Promise<void> {
    return this.#enqueue<void>((done) => ({ kind: "purge", commit, done }));
  }

  /** Messages from `offset` on (clamped to the first retained offset), across segments. */
  async read(offset: number, count: number, maxBytes: number): Promise<ReadResult> {
    // Retention may delete a segment between a read's snapshot and its open; a new snapshot no
    // longer holds it. The bound covers a read racing several passes in a row.
    for (let attempt = 1;; attempt++) {
      try {
        return await this.#read(offset, count, maxBytes);
      } catch (error) {
        const vanished = error instanceof DiskError && error.code === "not_found";
        const retired = error instanceof RemoteSegmentRetiredError;
        if ((!vanished && !retired) || attempt >= readAttemptsMax) throw error;
        // Its object is gone below the retention watermark: the segment leaves the chain as total
        // retention would have taken it, and the read starts again past it.
        if (retired) {
          const watermark = error.deletedUpToOffset;
          await this.enforceRetention((s) => s.location === "remote" && s.endOffset < watermark);
        }
      }
    }
  }

  /**
   * Stores a remote segment's `.index`, fetched because it was missing locally, and loads its
   * entries. Entries that are not increasing positions inside the segment are refused: the read
   * then scans from the segment's start, which is slower but right.
   */
  async installRemoteIndex(segment: Segment, bytes: Uint8Array): Promise<boolean> {
    assert(segment.location === "remote", "only a remote segment's index is fetched");
    const entries = decodeIndexEntries(bytes);
    const consistent = entries !== null &&
      entries.every((e, i) =>
        e.position < segment.sizeBytes && (i === 0 || e.position > entries[i - 1]!.position)
      );
    if (!consistent || segment.index.entries().length > 0) return false;
    await writeWholeFile(this.#disk, segment.indexPath, bytes);
    for (const e of entries) segment.index.add(e);
    segment.lastIndexedPosition = entries.at(-1)?.position ?? -1;
    return true;
  }

  /** Messages from the first one stamped at or after `timestampUs`. */
  async readFromTimestamp(timestampUs: number, count: number, maxBytes: number): Promise<ReadResult> {
    const offset = await this.#offsetForTimestamp(timestampUs);
    return await this.read(offset, count, maxBytes);
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
      nextOffset: this.#visibleNextOffset(),
      sizeBytes: segments.reduce((sum, s) => sum + s.sizeBytes, 0),
      segments,
    };
  }

  /** Finishes queued writes, syncs, and closes the files. Later writes are refused. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#running;
    await this.#backgroundSync;
    const active = this.#segments.at(-1)!;
    if (this.#failure === null) {
      if (this.#dirty) await active.logFile!.sync();
      await writeIndex(active);
    }
    for (const s of this.#segments) await closeFiles(s);
  }

  #enqueue<T>(make: (done: Deferred<T>) => WriteOp): Promise<T> {
    if (this.#closed) return Promise.reject(new PartitionUnavailableError(this.label, "the log is closed"));
    if (this.#failure !== null) {
      return Promise.reject(
        new PartitionUnavailableError(this.label, `an earlier write failed (${this.#failure.message})`),
      );
    }
    if (this.#queue.length >= this.#config.writeQueueMax) {
      return Promise.reject(new WriteQueueFullError(this.label, this.#config.writeQueueMax));
    }
    return new Promise<T>((resolve, reject) => {
      this.#queue.push(make({ resolve, reject } as Deferred<T>) as WriteOp);
      this.#kick();
    });
  }

  /**
   * Starts the writer unless it runs. When a drain ends, anything queued in the moment between its
   * last look at the queue and its end starts a new one: without that, an append made in that
   * window would wait forever.
   */
  #kick(): void {
    if (this.#running !== null) return;
    this.#running = this.#drain().finally(() => {
      this.#running = null;
      if (this.#queue.length > 0) this.#kick();
    });
  }

  async #drain(): Promise<void> {
    // Each pass takes at least one queued operation, so the queue's bound bounds the loop.
    while (this.#queue.length > 0 && this.#failure === null) {
      await this.#processGroup(this.#queue.splice(0, groupOpsMax));
    }
  }

  async #processGroup(group: WriteOp[]): Promise<void> {
    const acks: (() => void)[] = [];
    try {
      for (const op of group) acks.push(await this.#apply(op));
      await this.#flushPending();
      if (this.#config.fsync === "always" && this.#dirty) await this.#syncActive();
      this.#publishVisible();
      for (const ack of acks) ack();
    } catch (cause) {
      const error = cause instanceof Error ? cause : new Error(String(cause));
      this.#failure = error;
      const failed = new PartitionUnavailableError(this.label, `write failed: ${error.message}`);
      for (const op of [...group, ...this.#queue.splice(0)]) op.done.reject(failed);
    }
  }

  async #apply(op: WriteOp): Promise<() => void> {
    if (op.kind !== "append") await this.#flushPending();
    switch (op.kind) {
      case "append": {
        const result = await this.#writeBatch(op.messages);
        return () => op.done.resolve(result);
      }
      case "roll": {
        if (!this.#segments.at(-1)!.isEmpty) await this.#roll();
        return () => op.done.resolve();
      }
      case "sync": {
        this.#startBackgroundSync();
        return () => op.done.resolve();
      }
      case "retention": {
        const deleted = await this.#deleteFront(op.decide);
        return () => op.done.resolve(deleted);
      }
      case "evict": {
        const evicted = await this.#evict(op.victims, op.floor, op.identity);
        return () => op.done.resolve(evicted);
      }
      case "purge": {
        await this.#purge();
        await op.commit();
        return () => op.done.resolve();
      }
    }
  }

  async #writeBatch(messages: readonly MessageInput[]): Promise<AppendResult> {
    const segment = this.#segments.at(-1)!;
    const baseOffset = this.#nextOffset;
    // Server-assigned timestamps never go backwards within a partition, even if the wall clock does.
    const timestampUs = Math.max(this.#lastTimestampUs, Math.round(this.#clock.wallMs() * 1000));
    const batch = prepareBatch(messages);
    const position = segment.sizeBytes;
    // Batches of one group are written together, one write per write buffer, not one per batch.
    if (this.#pending !== null && this.#pendingBytes + batch.lengthBytes > this.#pending.length) {
      await this.#flushPending();
    }
    const target = this.#pendingSpace(batch.lengthBytes, position);
    writeBatchInto(target, baseOffset, timestampUs, batch);
    this.#pendingBytes += batch.lengthBytes;
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
      position - segment.lastIndexedPosition >= this.#config.indexIntervalBytes
    ) {
      segment.index.add({ relativeOffset: baseOffset - segment.startOffset, position, timestampUs });
      segment.lastIndexedPosition = position;
    }
    if (segment.sizeBytes >= this.#config.segmentSizeBytes) {
      await this.#flushPending();
      await this.#roll();
    }
    return { baseOffset, count: messages.length };
  }

  /**
   * Room for `lengthBytes` more in the write buffer, which the caller has written out if the batch
   * did not fit. A batch larger than a pooled buffer gets a buffer of its own, never pooled.
   */
  #pendingSpace(lengthBytes: number, position: number): Uint8Array {
    if (this.#pending === null) {
      // With every pooled buffer out (more partitions writing at once than the pool keeps), the batch
      // gets a buffer of its own size, as it would have without a pool, rather than a new 1 MiB one.
      const pool = this.#writeBuffers;
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

  /** Writes the pending bytes, then gives the buffer back: nothing refers to it after the write. */
  async #flushPending(): Promise<void> {
    const buffer = this.#pending;
    if (buffer === null) return;
    const bytes = buffer.subarray(0, this.#pendingBytes);
    const position = this.#pendingPosition;
    this.#pending = null;
    this.#pendingBytes = 0;
    try {
      await this.#segments.at(-1)!.logFile!.writeAt(bytes, position);
    } finally {
      this.#writeBuffers?.give(buffer);
    }
  }

  /** Seals the active segment (its bytes and index made durable first) and opens the next. */
  async #roll(): Promise<void> {
    const sealing = this.#segments.at(-1)!;
    await this.#backgroundSync;
    await sealing.logFile!.sync();
    await writeIndex(sealing);
    sealing.sealed = true;
    this.#sealedCount++;
    await closeFiles(sealing);
    this.#dirty = false;
    this.#lastSyncMs = this.#clock.nowMs();
    this.#segments.push(await PartitionLog.createSegment(this.#disk, this.#dir, this.#nextOffset));
  }

  /**
   * Under the interval policy no acknowledgement waits for the fsync, so it runs beside the
   * writer loop instead of holding it; it covers every byte written before it started.
   */
  #startBackgroundSync(): void {
    if (this.#backgroundSync !== null || !this.#dirty) return;
    const file = this.#segments.at(-1)!.logFile!;
    this.#dirty = false;
    this.#lastSyncMs = this.#clock.nowMs();
    this.#backgroundSync = file.sync()
      .catch((error: Error) => {
        this.#failure ??= error;
      })
      .finally(() => (this.#backgroundSync = null));
  }

  async #syncActive(): Promise<void> {
    await this.#segments.at(-1)!.logFile!.sync();
    this.#dirty = false;
    this.#lastSyncMs = this.#clock.nowMs();
  }

  async #evict(victims: Map<number, number>, floor: number, identity: MarkerIdentity): Promise<number> {
    let evicted = 0;
    for (const segment of this.#segments) {
      const logCrc32 = victims.get(segment.startOffset);
      if (logCrc32 === undefined) continue;
      // Checked again inside the loop: a purge or retention may have run since the hashing.
      if (!segment.sealed || segment.endOffset >= floor || segment.location === "remote") continue;
      const marker: RemoteMarker = {
        startOffset: segment.startOffset,
        endOffset: segment.endOffset,
        sizeBytes: segment.sizeBytes,
        indexSizeBytes: segment.index.length * indexEntryBytes,
        startTimestampUs: segment.firstTimestampUs ?? segment.maxTimestampUs,
        endTimestampUs: segment.maxTimestampUs,
        maxTimestampUs: segment.maxTimestampUs,
        createdRevision: identity.createdRevision,
        purgeGeneration: identity.purgeGeneration,
        logCrc32,
      };
      await writeWholeFile(this.#disk, segment.markerPath, encodeRemoteMarker(marker));
      await this.#disk.fsyncDir(this.#dir);
      // From here on reads go to the store for this segment; an open read handle keeps working.
      segment.marker = marker;
      segment.location = "remote";
      await this.#disk.unlink(segment.logPath);
      await this.#disk.fsyncDir(this.#dir);
      evicted++;
    }
    return evicted;
  }

  /** Bytes of the segments whose `.log` is on local disk (local or uploaded). */
  get localSizeBytes(): number {
    return this.#localBytes();
  }

  #localBytes(): number {
    return this.#segments.filter((s) => s.location !== "remote").reduce((sum, s) => sum + s.sizeBytes, 0);
  }

  async #deleteFront(decide: RetentionDecision): Promise<number> {
    let retainedBytes = this.#segments.reduce((sum, s) => sum + s.sizeBytes, 0);
    let deleted = 0;
    while (deleted < retentionSegmentsPerPassMax && this.#segments.length > 1) {
      const front = this.#segments[0]!;
      if (!front.sealed || !decide(front, retainedBytes)) break;
      // Out of the list first, so no new read picks up a segment whose files are going away.
      this.#segments.shift();
      if (front.location !== "remote") await this.#disk.unlink(front.logPath);
      await unlinkIfPresent(this.#disk, front.indexPath);
      if (front.marker !== null) await unlinkIfPresent(this.#disk, front.markerPath);
      retainedBytes -= front.sizeBytes;
      deleted++;
    }
    if (deleted > 0) await this.#disk.fsyncDir(this.#dir);
    return deleted;
  }

  async #purge(): Promise<void> {
    await this.#backgroundSync;
    const doomed = this.#segments;
    this.#segments = [];
    // Oldest first, so a crash part-way leaves a contiguous suffix that boot accepts.
    for (const segment of doomed) {
      await closeFiles(segment);
      if (segment.location !== "remote") await this.#disk.unlink(segment.logPath);
      await unlinkIfPresent(this.#disk, segment.indexPath);
      if (segment.marker !== null) await unlinkIfPresent(this.#disk, segment.markerPath);
    }
    await this.#disk.fsyncDir(this.#dir);
    this.#segments = [await PartitionLog.createSegment(this.#disk, this.#dir, 0)];
    this.#nextOffset = 0;
    this.#dirty = false;
  }

  #publishVisible(): void {
    for (let i = this.#segments.length - 1; i >= 0; i--) {
      const s = this.#segments[i]!;
      if (s.visibleSizeBytes === s.sizeBytes && s.visibleEndOffset === s.endOffset && s.sealed) break;
      s.visibleSizeBytes = s.sizeBytes;
      s.visibleEndOffset = s.endOffset;
    }
  }

  #visibleNextOffset(): number {
    const active = this.#segments.at(-1)!;
    return active.visibleEndOffset + 1;
  }

  async #read(requestedOffset: number, count: number, maxBytes: number): Promise<ReadResult> {
    assert(count >= 1 && maxBytes >= 1, "a read needs a positive count and byte budget");
    const segments = [...this.#segments];
    const visibleNext = segments.at(-1)!.visibleEndOffset + 1;
    let offset = Math.max(requestedOffset, segments[0]!.startOffset);
    if (offset >= visibleNext) return { messages: [], nextOffset: visibleNext, release: () => {} };
    const messages: StoredMessage[] = [];
    /** The remote windows the messages are views into, given back by `release`. */
    const borrowed: RemoteChunk[] = [];
    let bytes = 0;
    // The same visitor walks local and remote segments: one poll spans both seamlessly.
    const visit = (batch: Uint8Array, header: BatchHeader) => {
      if (header.baseOffset + header.lastOffsetDelta < offset) return true;
      for (const message of decodeMessages(batch)) {
        if (message.offset < offset) continue;
        const size = message.payload.length + (message.key?.length ?? 0);
        if (messages.length >= count || (messages.length > 0 && bytes + size > maxBytes)) return false;
        messages.push(message);
        bytes += size;
      }
      return messages.length < count && bytes < maxBytes;
    };
    let i = findSegmentIndex(segments, offset);
    for (; i < segments.length && messages.length < count && bytes < maxBytes; i++) {
      const segment = segments[i]!;
      if (segment.visibleSizeBytes === 0 || segment.visibleEndOffset < offset) continue;
      if (segment.location === "remote") await this.#remote?.ensureIndex(segment);
      const entry = segment.index.floorByOffset(offset - segment.startOffset);
      if (segment.location === "remote") {
        await this.#scanRemote(segment, entry, () => maxBytes - bytes, visit, borrowed);
      } else {
        // Start with a modest window (a poll of 100 × 1 KiB fits) and let the scan double it.
        const windowBytes = Math.min(maxBytes - bytes + 16 * 1024, 128 * 1024);
        await this.#scanLocal(segment, entry.position, windowBytes, visit);
      }
      offset = messages.length > 0 ? messages.at(-1)!.offset + 1 : segment.visibleEndOffset + 1;
    }
    return {
      messages,
      nextOffset: messages.length > 0 ? messages.at(-1)!.offset + 1 : offset,
      release: () => {
        for (const chunk of borrowed.splice(0)) this.#remote?.recycle?.(chunk);
      },
    };
  }

  async #scanLocal(
    segment: Segment,
    position: number,
    windowBytes: number,
    visit: (batch: Uint8Array, header: BatchHeader) => boolean,
  ): Promise<void> {
    // Reads use their own handle: a roll may close the writer's while this read is under way.
    const file = await this.#disk.open(segment.logPath, { readOnly: true });
    try {
      const end = await scanBatches(
        file,
        position,
        segment.visibleSizeBytes,
        { verify: false, windowBytes },
        visit,
      );
      if (end.kind === "torn" || end.kind === "corrupt") {
        throw new PartitionUnavailableError(
          this.label,
          `${segment.logPath} is ${end.kind} at byte ${end.position}`,
        );
      }
    } finally {
      await file.close();
    }
  }

  /**
   * Walks a remote segment chunk by chunk through the remote reader, from an index entry. Every
   * batch's CRC32C is checked, and its base offset, which the CRC32C does not cover, must follow the
   * one before (the first the index entry's): a mismatch drops the chunk and fetches it once more; a
   * second is never served.
   */
  async #scanRemote(
    segment: Segment,
    from: IndexEntry,
    wantBytes: () => number,
    visit: (batch: Uint8Array, header: BatchHeader) => boolean,
    borrowed: RemoteChunk[] | null,
  ): Promise<void> {
    const remote = this.#remote;
    if (remote === null) throw new RemoteReadUnavailableError(this.label, segment.startOffset);
    let pos = from.position;
    let expectedOffset = segment.startOffset + from.relativeOffset;
    // A poll's budget is often far more than its count needs (1 MiB by default for 100 messages):
    // the first window is modest and each further one doubles, up to what the poll still wants,
    // so a small poll does not read and allocate a megabyte and a large one still takes few windows.
    let windowBytes = Math.min(wantBytes(), remoteWindowFirstBytes);
    /** Where the last corrupt batch was found: a second failure there is never served. */
    let droppedAt: number | null = null;
    // Each pass consumes at least one batch, or doubles the window (bounded by the segment's size),
    // or drops a corrupt chunk once per position, and positions only grow: the loop ends.
    while (pos < segment.sizeBytes) {
      const chunk = await remote.chunkAt(segment, pos, windowBytes);
      // Checking and decoding a window is this read's piece: it runs on a turn of the piece gate.
      if (this.#gate !== null) await this.#gate.turn();
      const walked = walkChunk(chunk, pos, expectedOffset, visit);
      // A window the visitor may have kept views into is the read's until it is released; one that
      // did not hold a whole batch was not visited and goes back at once.
      if (walked.kind === "short" || borrowed === null) remote.recycle?.(chunk);
      else borrowed.push(chunk);
      if (walked.kind === "stopped") return;
      if (walked.kind === "short") {
        // A batch runs past the window: the same position again, with a larger window.
        windowBytes = Math.max(windowBytes * 2, chunk.bytes.length * 2);
        continue;
      }
      if (walked.kind === "corrupt") {
        // The batches before the bad one were good and are visited already: the retry starts at the
        // bad one (starting over at `pos` would hand them to the reader twice).
        if (walked.next === droppedAt) {
          throw new RemoteCorruptError(this.label, segment.startOffset, walked.next);
        }
        droppedAt = walked.next;
        pos = walked.next;
        expectedOffset = walked.nextOffset;
        await remote.drop(chunk);
        continue;
      }
      assert(walked.next > pos, "a remote read moves forward");
      pos = walked.next;
      expectedOffset = walked.nextOffset;
      windowBytes = Math.min(wantBytes(), windowBytes * 2);
    }
  }

  async #offsetForTimestamp(timestampUs: number): Promise<number> {
    const segments = [...this.#segments];
    const segment = segments.find((s) => s.visibleSizeBytes > 0 && s.maxTimestampUs >= timestampUs);
    if (segment === undefined) return segments.at(-1)!.visibleEndOffset + 1;
    let found = segment.visibleEndOffset + 1;
    const visit = (batch: Uint8Array, header: BatchHeader) => {
      if (header.maxTimestampUs < timestampUs) return true;
      const first = decodeMessages(batch).find((m) => m.timestampUs >= timestampUs);
      if (first !== undefined) found = first.offset;
      return first === undefined;
    };
    if (segment.location === "remote") {
      await this.#remote?.ensureIndex(segment);
      const entry = segment.index.floorByTimestamp(timestampUs);
      await this.#scanRemote(segment, entry, () => 64 * 1024, visit, null);
      return found;
    }
    const entry = segment.index.floorByTimestamp(timestampUs);
    const file = await this.#disk.open(segment.logPath, { readOnly: true });
    try {
      await scanBatches(file, entry.position, segment.visibleSizeBytes, { verify: false }, visit);
    } finally {
      await file.close();
    }
    return found;
  }
}

/** The bytes a remote walk asks for first (the remote reader adds room to finish a batch). */
export const remoteWindowFirstBytes = 64 * 1024;

/**
 * How many times a read starts over when retention deleted a segment under it. Each failed attempt
 * means a distinct segment left the list (it leaves before its files are unlinked), so a read
 * makes progress every time; the bound covers four whole retention passes.
 */
const readAttemptsMax = 4 * retentionSegmentsPerPassMax;

/**
 * Walks whole batches of one chunk from `position`, checking each one's CRC32C and that its base
 * offset is `expectedOffset`, then the one after the batch before. Chunks start and end on batch
 * boundaries, so a batch running past the chunk's end is corruption too.
 */
function walkChunk(
  chunk: RemoteChunk,
  position: number,
  expectedOffset: number,
  visit: (batch: Uint8Array, header: BatchHeader) => boolean,
): { kind: "end" | "stopped" | "short" | "corrupt"; next: number; nextOffset: number } {
  let at = position - chunk.start;
  let nextOffset = expectedOffset;
  const windowEnd = chunk.start + chunk.bytes.length;
  // A header cut by the window's end, or a batch running past it, is read again in a larger window
  // ("short" when not even one batch fit); past the chunk's own end (a batch boundary) it is corrupt.
  const cut = () => ({
    kind: at === position - chunk.start ? "short" as const : "end" as const,
    next: chunk.start + at,
    nextOffset,
  });
  while (at < chunk.bytes.length) {
    const header = decodeBatchHeader(chunk.bytes, at);
    if (header === null && windowEnd < chunk.end) return cut();
    const corrupt = { kind: "corrupt" as const, next: chunk.start + at, nextOffset };
    if (header === null || !isPlausibleHeader(header)) return corrupt;
    if (at + header.lengthBytes > chunk.bytes.length) {
      if (chunk.start + at + header.lengthBytes > chunk.end) return corrupt;
      return cut();
    }
    const batch = chunk.bytes.subarray(at, at + header.lengthBytes);
    if (header.baseOffset !== nextOffset || !verifyBatch(batch)) return corrupt;
    nextOffset = header.baseOffset + header.lastOffsetDelta + 1;
    if (!visit(batch, header)) {
      return { kind: "stopped", next: chunk.start + at + header.lengthBytes, nextOffset };
    }
    at += header.lengthBytes;
  }
  return { kind: "end", next: chunk.start + at, nextOffset };
}

async function unlinkIfPresent(disk: Disk, path: string): Promise<void> {
  try {
    await disk.unlink(path);
  } catch (error) {
    if (!(error instanceof DiskError && error.code === "not_found")) throw error;
  }
}

/** CRC32 of a segment's `.log`, read 1 MiB at a time with a yield after each piece. */
async function hashLog(disk: Disk, segment: Segment): Promise<number> {
  const crc = new Crc32Stream();
  const file = await disk.open(segment.logPath, { readOnly: true });
  try {
    for (let at = 0; at < segment.sizeBytes; at += hashPieceBytes) {
      crc.update(await readExactly(file, at, Math.min(hashPieceBytes, segment.sizeBytes - at)));
      await yieldToReactor();
    }
  } finally {
    await file.close();
  }
  return crc.digest();
}

const hashPieceBytes = 1024 * 1024;

/** Writes a segment's whole in-memory index to its file and makes it durable. */
async function writeIndex(segment: Segment): Promise<void> {
  const bytes = encodeIndexEntries(segment.index.entries());
  await segment.indexFile!.truncate(0);
  await segment.indexFile!.writeAt(bytes, 0);
  await segment.indexFile!.sync();
}

/** Index of the last segment starting at or before `offset`. */
function findSegmentIndex(segments: readonly Segment[], offset: number): number {
  let lo = 0;
  let hi = segments.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (segments[mid]!.startOffset <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

async function closeFiles(segment: Segment): Promise<void> {
  await segment.logFile?.close();
  await segment.indexFile?.close();
  segment.logFile = null;
  segment.indexFile = null;
}

export { readExactly };
