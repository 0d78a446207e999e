import type { PieceGate } from "../../runtime/cooperation/piece_gate.ts";
import type { BufferPool } from "../../runtime/memory/buffers.ts";
import { assert } from "../../runtime/assert.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import { AppendWaiters } from "./append_waiters.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import type { MessageInput } from "../batch/batch_codec.ts";
import { evictionVictims, type KeepLocal } from "../retention/local_retention.ts";
import type { LogConfig } from "../log_config.ts";
import type { RemoteTable } from "../remote/remote_table.ts";
import type { MarkerIdentity, RemoteMarker } from "../remote/remote_marker.ts";
import type { RemoteReader } from "../remote/remote_reader.ts";
import { RemoteWalk } from "../remote/remote_walk.ts";
import type { Segment } from "../segment/segment.ts";
import {
  type AppendInput,
  type AppendResult,
  type LogStats,
  SegmentChain,
} from "../segment/segment_chain.ts";
import {
  type BatchOrigin,
  checkProducedBatches,
  noProduceLimits,
  type ProduceChecks,
} from "../batch/produced_batches.ts";
import { hashLog } from "../segment/segment_eviction.ts";
import type { ReplaceDecision } from "../segment/segment_replacement.ts";
import {
  type BatchReadResult,
  readBatchesFrom,
  type ReadContext,
  type ReadResult,
  readRetrying,
  readSegments,
} from "../read/segment_reads.ts";
import { offsetForTimestamp } from "../read/timestamp_lookup.ts";
import { abortedBatchTest, collectAbortedTxns } from "../read/aborted_reads.ts";
import type { AbortedTxn } from "../producers/aborted_txns.ts";
import type { RetentionDecision } from "../retention/total_retention.ts";
import { applyWriteOp, type WriteContext, type WriteOp, WriteQueue } from "./write_queue.ts";
import { belowWatermark, checkReplicatedBatches, replicatedRuns } from "../batch/replicated_batches.ts";
import type { EpochStart, LeaderEpochs } from "./leader_epochs.ts";
import type { RecoveredProducers } from "../producers/producer_snapshots.ts";
import type { ProducerStates } from "../producers/producer_states.ts";

/** Bound on `onActivity` listeners of one log (the shard's tick and its tier service use one each). */
const activityListenersMax = 4;

/** How often a log looks for idempotent producers idle past `producerIdExpirationMs` (Kafka: 10 min). */
export const producerExpiryCheckIntervalMs = 60_000;

/**
 * A partition's segmented log. Every change goes through one writer loop (`WriteQueue`): appends,
 * rolls, the interval fsync, retention, eviction and purge are operations on it, run in order
 * against the segment chain (`SegmentChain`), group-committed, and only then made visible to
 * readers and acknowledged. Reads snapshot the segment list and never see unacknowledged bytes;
 * they span local segments and evicted ones, read through the attached remote reader.
 */
export class PartitionLog {
  readonly label: string;
  readonly #disk: Disk;
  readonly #dir: string;
  readonly #clock: Clock;
  #config: LogConfig;
  readonly #chain: SegmentChain;
  readonly #queue: WriteQueue<WriteOp>;
  readonly #writeContext: WriteContext;
  readonly #reads: ReadContext;
  readonly #activityListeners = new Map<string, () => void>();
  readonly #appendWaiters: AppendWaiters;
  /** Waiters on the log's end (replica fetches), where `#appendWaiters` wait on the high watermark. */
  readonly #logEndWaiters: AppendWaiters;
  /** Replicated: the offset below which every in-sync replica holds the log; null: a single node. */
  #highWatermark: number | null = null;
  /** A follower's segments roll where the leader's did, never by its own size or age. */
  #following = false;
  /** When (tick clock ms) idle producers are looked for next. */
  #producerExpiryCheckMs = 0;

  constructor(
    disk: Disk,
    dir: string,
    clock: Clock,
    config: LogConfig,
    segments: Segment[],
    label: string,
    epochs?: LeaderEpochs,
    remoteTable?: RemoteTable,
    producers?: RecoveredProducers,
  ) {
    this.#disk = disk;
    this.#dir = dir;
    this.#clock = clock;
    this.#config = config;
    this.#chain = new SegmentChain(disk, dir, clock, segments, epochs, remoteTable, producers);
    this.#appendWaiters = new AppendWaiters(clock);
    this.#logEndWaiters = new AppendWaiters(clock);
    this.label = label;
    this.#queue = new WriteQueue<WriteOp>(label, () => this.#config.writeQueueMax, {
      apply: (op) => applyWriteOp(this.#writeContext, op),
      flush: () => this.#chain.flushPending(),
      syncDue: () => this.#config.fsync === "always" && this.#chain.dirty,
      sync: () => this.#chain.syncActive(),
      publish: () => {
        this.#chain.publishVisible();
        this.#logEndWaiters.published(this.#chain.visibleNextOffset());
        this.#appendWaiters.published(this.highWatermark);
        this.#noteActivity();
      },
      // The listeners' next look finds `failure` set: the host reports the stop, once.
      stopped: () => this.#noteActivity(),
    });
    this.#reads = { disk, label, remote: new RemoteWalk(label) };
    this.#writeContext = {
      disk,
      dir,
      chain: this.#chain,
      config: () => this.#config,
      fail: (error) => this.#queue.fail(error),
    };
  }

  /** Creates the files of an empty active segment at `startOffset` and makes them durable. */
  static createSegment(disk: Disk, dir: string, startOffset: number): Promise<Segment> {
    return SegmentChain.createSegment(disk, dir, startOffset);
  }

  get config(): LogConfig {
    return this.#config;
  }

  /** The failure that stopped this log's writes for good; null while it serves them. */
  get failure(): Error | null {
    return this.#queue.failure;
  }

  /** Topic options may change at run time; they apply from the next write or tick. */
  updateConfig(config: LogConfig): void {
    this.#config = config;
    this.#noteActivity();
  }

  /**
   * Calls `listener` after every group of writes is published, after a change of config and when a
   * failed write stops the log (`failure`): the moments when the shard's duties or the tier service
   * may have work here. Returns what removes the listener.
   */
  onActivity(name: string, listener: () => void): () => void {
    assert(
      !this.#activityListeners.has(name),
      `Cannot listen to ${this.label} as ${name}: already listening`,
    );
    assert(
      this.#activityListeners.size < activityListenersMax,
      `Cannot listen to ${this.label}: ${activityListenersMax} listeners already`,
    );
    this.#activityListeners.set(name, listener);
    return () => this.#activityListeners.delete(name);
  }

  #noteActivity(): void {
    for (const listener of this.#activityListeners.values()) listener();
  }

  get #logAppendTime(): boolean {
    return this.#config.timestampType === "log_append_time";
  }

  get nextOffset(): number {
    return this.#chain.visibleNextOffset();
  }

  /** The first offset still held (the log start): the start of the oldest segment. */
  get firstOffset(): number {
    return this.#chain.segments[0]!.startOffset;
  }

  /** The end of what consumers read: the high watermark when replicated, else the log's end. */
  get highWatermark(): number {
    const end = this.nextOffset;
    return this.#highWatermark === null ? end : Math.min(this.#highWatermark, end);
  }

  /** The last stable offset (`ProducerStates.lastStableOffset`): a read_committed read ends below it. */
  get lastStableOffset(): number {
    return this.#chain.producers.lastStableOffset(this.highWatermark);
  }

  /**
   * Replication's view of this log: the epoch its batches are stamped with while it leads (-1: none), whether
   * it follows (rolls only where the leader's segments start), and the high watermark (null: a single node),
   * which never goes back but by a truncation.
   */
  setReplication(
    replication: { leaderEpoch: number; following: boolean; highWatermark: number | null },
  ): void {
    this.#chain.leaderEpoch = replication.leaderEpoch;
    this.#following = replication.following;
    this.setHighWatermark(replication.highWatermark);
  }

  /** Moves the high watermark (null: none); consumers waiting below it wake. */
  setHighWatermark(highWatermark: number | null): void {
    assert(
      highWatermark === null || (Number.isSafeInteger(highWatermark) && highWatermark >= 0),
      `Cannot set the high watermark of ${this.label} to ${highWatermark}`,
    );
    this.#highWatermark = highWatermark;
    this.#appendWaiters.published(this.highWatermark);
  }

  /** Resolves once the readable end (`highWatermark`) passes `afterOffset`, or after `timeoutMs`. */
  waitForAppend(afterOffset: number, timeoutMs: number): Promise<void> {
    return this.#appendWaiters.wait(afterOffset, timeoutMs, () => this.highWatermark);
  }

  /** Resolves once the log's own end passes `afterOffset`, or after `timeoutMs`: a replica fetch's wait. */
  waitForLogEnd(afterOffset: number, timeoutMs: number): Promise<void> {
    return this.#logEndWaiters.wait(afterOffset, timeoutMs, () => this.nextOffset);
  }

  /**
   * Whole batches from the one holding `offset` (within the log) for about `maxBytes`, at least
   * one, below `endOffset` (the high watermark unless a replica reads up to the log's end).
   */
  readBatches(offset: number, maxBytes: number, endOffset = this.highWatermark): Promise<BatchReadResult> {
    return readRetrying(
      () => readBatchesFrom(this.#reads, this.#chain.segments, offset, maxBytes, endOffset),
      (watermark) => this.enforceRetention((s) => s.location === "remote" && s.endOffset < watermark),
    );
  }

  /** The aborted transactions a read_committed fetch of `[fromOffset, upperBoundOffset)` lists (`collectAbortedTxns`). */
  abortedTxns(fromOffset: number, upperBoundOffset: number): Promise<AbortedTxn[]> {
    return collectAbortedTxns(this.#reads, this.#chain.segments, fromOffset, upperBoundOffset);
  }

  /** The leader epochs this log's batches were written under (Kafka's leader epoch cache). */
  get leaderEpochs(): LeaderEpochs {
    return this.#chain.epochs;
  }

  /** The idempotent producers whose batches this log holds. */
  get producers(): ProducerStates {
    return this.#chain.producers;
  }

  /**
   * A tiered partition's floor is `offset`: the producer snapshots taken above it are held until
   * the uploads of the segments they end go up with them (`ProducerSnapshots.holdAbove`).
   */
  holdProducerSnapshotsAbove(offset: number): void {
    this.#chain.producerSnapshots.holdAbove(offset);
  }

  /**
   * Cuts the log at `offset` (a batch boundary at or above the log start): everything from it on
   * is deleted, and the high watermark comes down to it if it was above. A follower does this where
   * its log diverged from its leader's.
   */
  async truncateTo(offset: number): Promise<void> {
    await this.#queue.enqueue<void>((done) => ({ kind: "truncate", offset, done }));
    if (this.#highWatermark !== null && this.#highWatermark > offset) this.#highWatermark = offset;
  }

  /** A read replica's new segments, planted at its head (`plantRemoteSegments`). */
  plantRemote(markers: readonly RemoteMarker[], epochs: readonly EpochStart[]): Promise<void> {
    return this.#queue.enqueue<void>((done) => ({ kind: "plant", markers, epochs, done }));
  }

  /** Start offsets of the segments that start in [`fromOffset`, `toOffset`): a follower rolls there. */
  segmentStartsIn(fromOffset: number, toOffset: number): number[] {
    return this.#chain.segments.map((s) => s.startOffset).filter((o) => o >= fromOffset && o < toOffset);
  }

  /** Lends the log its write buffers: a group's batches share one buffer and one write. */
  useWriteBuffers(pool: BufferPool): void {
    this.#chain.useWriteBuffers(pool);
  }

  /**
   * Lends batch reads (a Kafka fetch's) their read windows, taken back when the read is released:
   * without a pool each window is a fresh buffer, a megabyte of garbage per window.
   */
  useBatchWindows(pool: BufferPool): void {
    this.#reads.batchWindows = pool;
  }

  /** Reads of evicted segments go through this once the tier service attaches its cache. */
  attachRemoteReader(reader: RemoteReader, gate?: PieceGate): void {
    this.#reads.remote.attach(reader, gate);
  }

  /** Grows by one at every seal: the tier service's cue to look for new work. */
  get sealedCount(): number {
    return this.#chain.sealedCount;
  }

  get segments(): readonly Segment[] {
    return this.#chain.segments;
  }

  /** Bytes of the segments whose `.log` is on local disk (local or uploaded). */
  get localSizeBytes(): number {
    return this.#chain.localBytes();
  }

  /**
   * The evicted segments, held only in the object store: the chain's prefix, so counted by bisection
   * rather than by walking every segment.
   */
  get remoteSegments(): number {
    const segments = this.#chain.segments;
    let low = 0;
    let high = segments.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (segments[mid]!.location === "remote") low = mid + 1;
      else high = mid;
    }
    return low;
  }

  /** Bytes of the evicted segments' indexes the shard's index cache holds for this log now. */
  get remoteIndexBytes(): number {
    return this.#reads.remote.reader?.indexBytes?.() ?? 0;
  }

  /** Bytes of the evicted segments, held only in the object store. */
  get remoteSizeBytes(): number {
    return this.#chain.segments.reduce((n, s) => s.location === "remote" ? n + s.sizeBytes : n, 0);
  }

  append(messages: readonly MessageInput[]): Promise<AppendResult> {
    assert(messages.length > 0, "Cannot append an empty batch");
    const input: AppendInput = { kind: "messages", messages, stampAppendTime: this.#logAppendTime };
    return this.#queue.enqueue<AppendResult>((done) => ({ kind: "append", input, done }));
  }

  /**
   * Appends the Kafka record batches of `records` (one or more, back to back, as a producer sends a
   * partition's records) at consecutive offsets, each kept as sent but for its base offset (and,
   * when the topic keeps log append time, that time). Every batch is checked first
   * (`checkProducedBatches`, in pieces with `checks.turn` between them): a refusal appends none.
   */
  async appendRecordBatches(
    records: Uint8Array,
    checks: ProduceChecks = noProduceLimits,
    origin: BatchOrigin = "client",
  ): Promise<AppendResult> {
    const batches = await checkProducedBatches(records, checks, origin);
    const input: AppendInput = { kind: "batches", batches, stampAppendTime: this.#logAppendTime };
    return await this.#queue.enqueue<AppendResult>((done) => ({ kind: "append", input, done }));
  }

  /**
   * A follower's append of its leader's batches, byte for byte (`SegmentChain`'s "replicated"
   * append) in runs as large as a produce, rolling where `segmentStarts` says the leader's segments
   * start. Each run is checked as a produce is and must continue this log exactly, else it and the
   * rest are not appended and the call throws `ReplicaAppendError`. Resolves with the last run's result.
   */
  async appendReplicated(records: Uint8Array, segmentStarts: ReadonlySet<number>, checks = noProduceLimits) {
    let result: AppendResult = { baseOffset: this.#chain.pendingNextOffset, count: 0 };
    for (const run of replicatedRuns(records)) {
      const batches = await checkReplicatedBatches(run, checks, this.#chain.pendingNextOffset, this.label);
      const input: AppendInput = { kind: "replicated", batches, segmentStarts };
      result = await this.#queue.enqueue<AppendResult>((done) => ({ kind: "append", input, done }));
    }
    return result;
  }

  /**
   * Called from the shard's tick: rolls an aged active segment and runs the interval fsync. Returns
   * when (clock ms) it next has something to do if nothing is written meanwhile; `Infinity` when only
   * a write can give it work. A write, roll or sync calls the activity listeners, so the shard calls
   * this again then instead of on every tick.
   */
  onTick(nowMs: number): number {
    if (this.#queue.failure !== null || this.#queue.closed) return Infinity;
    return Math.min(this.#rollDueMs(nowMs), this.#syncDueMs(nowMs), this.#producerExpiryDueMs(nowMs));
  }

  /** Forgets idle producers (`producerIdExpirationMs`), at most once a `producerExpiryCheckIntervalMs`. */
  #producerExpiryDueMs(nowMs: number): number {
    const expirationMs = this.#config.producerIdExpirationMs;
    if (expirationMs === undefined || this.#chain.producers.size === 0) return Infinity;
    if (nowMs < this.#producerExpiryCheckMs) return this.#producerExpiryCheckMs;
    // A map change between the writer loop's steps, never inside one: each step is synchronous.
    this.#chain.producers.expire(this.#clock.wallMs(), expirationMs);
    this.#producerExpiryCheckMs = nowMs + producerExpiryCheckIntervalMs;
    return this.#producerExpiryCheckMs;
  }

  #rollDueMs(nowMs: number): number {
    if (this.#following) return Infinity;
    const active = this.#chain.active;
    const maxAgeMs = this.#config.segmentMaxAgeMs;
    if (maxAgeMs === null || active.firstTimestampUs === null || this.#queue.has("roll")) return Infinity;
    // The age is wall time; the answer is on the tick's clock.
    const leftMs = active.firstTimestampUs / 1000 + maxAgeMs - this.#clock.wallMs();
    if (leftMs > 0) return nowMs + leftMs;
    // A roll that fails stops the log (`failure`), which the host logs; a full queue refuses it,
    // and the next tick tries again. Neither is lost by dropping the rejection here.
    this.#queue.enqueue<void>((done) => ({ kind: "roll", done })).catch(() => {});
    // The roll's publish calls the listeners; a roll refused (queue full) is tried at the next tick.
    return this.#queue.has("roll") ? Infinity : nowMs;
  }

  #syncDueMs(nowMs: number): number {
    if (this.#config.fsync !== "interval" || !this.#chain.dirty || this.#queue.has("sync")) return Infinity;
    const dueMs = this.#chain.lastSyncMs + this.#config.fsyncIntervalMs;
    if (nowMs < dueMs) return dueMs;
    // As the roll above: a failed fsync stops the log and is logged by the host.
    this.#queue.enqueue<void>((done) => ({ kind: "sync", done })).catch(() => {});
    return this.#queue.has("sync") ? Infinity : nowMs;
  }

  /** Deletes the oldest sealed segments `decide` selects, at most 16 per pass; never the active one. */
  enforceRetention(decide: RetentionDecision): Promise<number> {
    return this.#queue.enqueue<number>((done) => ({ kind: "retention", decide, done }));
  }

  /**
   * Local eviction of the segments `evictionVictims` chooses (below the tiered floor, exclusive,
   * and not wanted by `keepLocal`; at most 16 per pass). Each victim's `.log` checksum comes from
   * `knownLogCrc32` or is computed first, outside the writer loop, piece by piece; then, inside
   * it, `evictSegments` takes its durable steps in order.
   */
  async evictLocal(
    floor: number,
    identity: MarkerIdentity,
    keepLocal: KeepLocal,
    knownLogCrc32: (startOffset: number) => number | undefined = () => undefined,
  ): Promise<number> {
    const victims = new Map<number, number>();
    for (const segment of evictionVictims(this.#chain.segments, floor, keepLocal)) {
      // The uploader already hashed the .log; only an unknown checksum (after a restart) is read again.
      victims.set(
        segment.startOffset,
        knownLogCrc32(segment.startOffset) ?? await hashLog(this.#disk, segment),
      );
    }
    if (victims.size === 0) return 0;
    return await this.#queue.enqueue<number>((done) => ({ kind: "evict", victims, floor, identity, done }));
  }

  /** Replaces a range of remote segments by `markers`' segments (`replaceRemoteSegments`). */
  replaceRemote(markers: readonly RemoteMarker[], identity: MarkerIdentity): Promise<ReplaceDecision> {
    return this.#queue.enqueue<ReplaceDecision>((done) => ({ kind: "replace", markers, identity, done }));
  }

  /** Deletes every segment and starts again at offset 0; `commit` runs before anything is acknowledged. */
  purge(commit: () => Promise<void>): Promise<void> {
    return this.#queue.enqueue<void>((done) => ({ kind: "purge", commit, done }));
  }

  /**
   * Messages from `offset` on (clamped to the log start) below `endOffset`: the high watermark, or the log's
   * end for a leader's own reader (a group coordinator loading its partition).
   */
  async read(offset: number, count: number, maxBytes: number, endOffset?: number): Promise<ReadResult> {
    const end = endOffset ?? this.highWatermark;
    const result = await readRetrying(
      () => readSegments(this.#reads, this.#chain.segments, offset, count, maxBytes),
      (watermark) => this.enforceRetention((s) => s.location === "remote" && s.endOffset < watermark),
    );
    return belowWatermark(result, end);
  }

  /**
   * Messages as a read_committed consumer sees them: below the last stable offset, without the
   * records of aborted transactions (`collectAbortedTxns` up to it).
   */
  async readCommitted(offset: number, count: number, maxBytes: number): Promise<ReadResult> {
    const end = this.lastStableOffset;
    const aborted = offset < end ? await this.abortedTxns(offset, end) : [];
    const skip = abortedBatchTest(aborted);
    const result = await readRetrying(
      () => readSegments(this.#reads, this.#chain.segments, offset, count, maxBytes, skip),
      (watermark) => this.enforceRetention((s) => s.location === "remote" && s.endOffset < watermark),
    );
    return belowWatermark(result, end);
  }

  /** The offset of the first message stamped at or after `timestampUs`; past every one, the next offset. */
  offsetForTimestamp(timestampUs: number): Promise<number> {
    return offsetForTimestamp(this.#reads, this.#chain.segments, timestampUs);
  }

  /** Messages from the first one stamped at or after `timestampUs`. */
  async readFromTimestamp(timestampUs: number, count: number, maxBytes: number): Promise<ReadResult> {
    const offset = await offsetForTimestamp(this.#reads, this.#chain.segments, timestampUs);
    return await this.read(offset, count, maxBytes);
  }

  stats(): LogStats {
    return this.#chain.stats();
  }

  /** Finishes queued writes, syncs, and closes the files. Later writes are refused. */
  close(): Promise<void> {
    if (this.#queue.closed) return Promise.resolve();
    this.#appendWaiters.wakeAll();
    this.#logEndWaiters.wakeAll();
    const writing = this.#queue.close();
    return this.#chain.close(writing, () => this.#queue.failure !== null);
  }
}
