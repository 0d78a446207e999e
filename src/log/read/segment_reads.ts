import { assert } from "../../runtime/assert.ts";
import type { BufferPool } from "../../runtime/memory/buffers.ts";
import { type Disk, DiskError } from "../../runtime/disk/disk.ts";
import { yieldToReactor } from "../../runtime/cooperation/piece_gate.ts";
import {
  type BatchHeader,
  decodeMessages,
  decodeMessagesInPieces,
  decodesInOneStep,
  type StoredMessage,
} from "../batch/batch_codec.ts";
import type { Pause } from "../compression/batch_compression.ts";
import { PartitionUnavailableError } from "../log_errors.ts";
import { type RemoteChunk, RemoteSegmentRetiredError } from "../remote/remote_reader.ts";
import { type BatchVisitor, type RemoteWalk, remoteWindowMaxBytes } from "../remote/remote_walk.ts";
import { scanBatches } from "./scan_batches.ts";
import type { Segment } from "../segment/segment.ts";
import type { IndexEntry, SparseIndex } from "../segment/sparse_index.ts";
import { retentionSegmentsPerPassMax } from "../retention/total_retention.ts";

export interface ReadResult {
  messages: StoredMessage[];
  nextOffset: number;
  /**
   * Gives back the remote windows the messages are views into: call it once the messages are
   * encoded and nothing reads them any more (the HTTP route does), or never; twice is harmless.
   */
  release(): void;
}

/** Where a read of a segment without a usable index starts: its first batch. */
export const segmentStart: IndexEntry = { relativeOffset: 0, position: 0, timestampUs: 0 };

/**
 * The index a read of `segment` starts from: a local segment's own, a remote one's from the remote
 * reader's bounded cache; null when a remote one has none usable (or there is no remote reader,
 * whose absence the walk reports).
 */
export async function indexOf(context: ReadContext, segment: Segment): Promise<SparseIndex | null> {
  if (segment.location !== "remote") return segment.localIndex;
  return await context.remote.reader?.index(segment) ?? null;
}

/** What a read works on: the log's disk, its label for errors, and its remote walk. */
export interface ReadContext {
  disk: Disk;
  label: string;
  remote: RemoteWalk;
  /** Awaited between two pieces of a batch's decoding (`yieldToReactor` when absent). */
  pause?: Pause;
  /**
   * Read windows of batch reads (a Kafka fetch's), lent until the answer is written; fresh buffers
   * when absent. Message reads never use them: their messages are views that outlive the read.
   */
  batchWindows?: BufferPool;
}

/**
 * Hands a batch's messages to `take` and answers what `take` does: at once when they decode in one
 * step (`decodesInOneStep`), else once they are decoded in pieces, a pause between two. A control
 * batch (a transaction marker) has no messages: it is passed over, and the walk goes on.
 */
export function visitMessages(
  context: ReadContext,
  batch: Uint8Array,
  header: BatchHeader,
  take: (messages: StoredMessage[]) => boolean,
): boolean | Promise<boolean> {
  if (header.control) return true;
  if (decodesInOneStep(header)) return take(decodeMessages(batch));
  return decodeMessagesInPieces(batch, context.pause ?? yieldToReactor).then(take);
}

/**
 * How many times a read starts over when retention deleted a segment under it. Each failed attempt
 * means a distinct segment left the list (it leaves before its files are unlinked), so a read
 * makes progress every time; the bound covers four whole retention passes.
 */
const readAttemptsMax = 4 * retentionSegmentsPerPassMax;

/**
 * Runs `read` again while retention deletes a segment between a read's snapshot and its open: a
 * new snapshot no longer holds it. A remote segment whose object is gone below the store's
 * retention watermark goes to `retire`, which takes it out of the chain as total retention would
 * have, and the read starts again past it.
 */
export async function readRetrying<T>(
  read: () => Promise<T>,
  retire: (deletedUpToOffset: number) => Promise<unknown>,
): Promise<T> {
  // The bound covers a read racing several passes in a row.
  for (let attempt = 1;; attempt++) {
    try {
      return await read();
    } catch (error) {
      const vanished = error instanceof DiskError && error.code === "not_found";
      const retired = error instanceof RemoteSegmentRetiredError;
      if ((!vanished && !retired) || attempt >= readAttemptsMax) throw error;
      if (retired) await retire(error.deletedUpToOffset);
    }
  }
}

/**
 * Messages from `requestedOffset` on (clamped to the first retained offset), across a snapshot of
 * the chain: local and remote segments alike, at most `count` messages and about `maxBytes` of
 * payload (always at least one message). Only visible (acknowledged) bytes are read; the batches
 * `skipBatch` names (an aborted transaction's, for a read_committed poll) are passed over.
 */
export async function readSegments(
  context: ReadContext,
  chain: readonly Segment[],
  requestedOffset: number,
  count: number,
  maxBytes: number,
  skipBatch: (header: BatchHeader) => boolean = () => false,
): Promise<ReadResult> {
  assert(count >= 1 && maxBytes >= 1, "a read needs a positive count and byte budget");
  const segments = [...chain];
  const visibleNext = segments.at(-1)!.visibleEndOffset + 1;
  let offset = Math.max(requestedOffset, segments[0]!.startOffset);
  if (offset >= visibleNext) return { messages: [], nextOffset: visibleNext, release: () => {} };
  const messages: StoredMessage[] = [];
  /** The remote windows the messages are views into, given back by `release`. */
  const borrowed: RemoteChunk[] = [];
  let bytes = 0;
  // Set once a message does not fit: the read ends there, so that no later message follows a gap.
  let full = false;
  // The same visitor walks local and remote segments: one poll spans both seamlessly.
  const take = (decoded: StoredMessage[]): boolean => {
    for (const message of decoded) {
      if (message.offset < offset) continue;
      const size = (message.payload?.length ?? 0) + (message.key?.length ?? 0);
      if (messages.length >= count || (messages.length > 0 && bytes + size > maxBytes)) {
        full = true;
        return false;
      }
      messages.push(message);
      bytes += size;
    }
    return messages.length < count && bytes < maxBytes;
  };
  const visit: BatchVisitor = (batch, header) => {
    if (header.baseOffset + header.lastOffsetDelta < offset || skipBatch(header)) return true;
    return visitMessages(context, batch, header, take);
  };
  let i = findSegmentIndex(segments, offset);
  for (; i < segments.length && !full && messages.length < count && bytes < maxBytes; i++) {
    const segment = segments[i]!;
    if (segment.visibleSizeBytes === 0 || segment.visibleEndOffset < offset) continue;
    const entry = (await indexOf(context, segment))?.floorByOffset(offset - segment.startOffset) ??
      segmentStart;
    if (segment.location === "remote") {
      await context.remote.walk(segment, entry, () => maxBytes - bytes, visit, borrowed);
    } else {
      // Start with a modest window (a poll of 100 × 1 KiB fits) and let the scan double it.
      const windowBytes = Math.min(maxBytes - bytes + 16 * 1024, 128 * 1024);
      await scanLocal(context, segment, entry.position, windowBytes, visit);
    }
    offset = messages.length > 0 ? messages.at(-1)!.offset + 1 : segment.visibleEndOffset + 1;
  }
  return {
    messages,
    nextOffset: messages.length > 0 ? messages.at(-1)!.offset + 1 : offset,
    release: () => {
      for (const chunk of borrowed.splice(0)) context.remote.reader?.recycle?.(chunk);
    },
  };
}

/** Walks a local segment's visible batches from `position`; a torn or corrupt one fails the read. */
export async function scanLocal(
  context: ReadContext,
  segment: Segment,
  position: number,
  windowBytes: number,
  visit: BatchVisitor,
  takeWindow?: (lengthBytes: number) => Uint8Array,
): Promise<void> {
  // Reads use their own handle: a roll may close the writer's while this read is under way.
  const file = await context.disk.open(segment.logPath, { readOnly: true });
  try {
    const end = await scanBatches(
      file,
      position,
      segment.visibleSizeBytes,
      { verify: false, windowBytes, ...(takeWindow === undefined ? {} : { takeWindow }) },
      visit,
    );
    if (end.kind === "torn" || end.kind === "corrupt") {
      throw new PartitionUnavailableError(
        context.label,
        `${segment.logPath} is ${end.kind} at byte ${end.position}`,
      );
    }
  } finally {
    await file.close();
  }
}

/** Index of the last segment starting at or before `offset` (segments in offset order, by bisection). */
export function findSegmentIndex(segments: readonly Segment[], offset: number): number {
  let lo = 0;
  let hi = segments.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (segments[mid]!.startOffset <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Whole batches as the log holds them, for a Kafka fetch. */
export interface BatchReadResult {
  /** Views into read windows or cache chunks, in offset order; the first holds the offset asked for. */
  batches: Uint8Array[];
  sizeBytes: number;
  /** The offset after the last batch's last record; the offset asked for when none. */
  nextOffset: number;
  /** Gives back the cache chunks the batches are views into, once they are written out. */
  release(): void;
}

/** The first local read window of a batch read, at most. */
const localWindowBytesMax = 1024 * 1024;

/**
 * Whole batches from the one that holds `offset` on, across a snapshot of the chain (local and
 * remote segments alike), as long as they fit `maxBytes`, but always the first: a batch larger
 * than the budget still goes (as Kafka's KIP-74 says), so a consumer always makes progress. The
 * caller checks that `offset` is within the log; only visible (acknowledged) bytes are read, and
 * only batches that end below `endOffset` (a replicated log's high watermark).
 */
export async function readBatchesFrom(
  context: ReadContext,
  chain: readonly Segment[],
  offset: number,
  maxBytes: number,
  endOffset = Infinity,
): Promise<BatchReadResult> {
  assert(maxBytes >= 1, "a batch read needs a byte budget");
  const segments = [...chain];
  const batches: Uint8Array[] = [];
  const borrowed: RemoteChunk[] = [];
  const windows = new LentWindows(context.batchWindows);
  let sizeBytes = 0;
  let nextOffset = offset;
  // Set once a batch does not fit: the read ends there, so that no later batch follows a gap.
  let full = false;
  /** Whether the read ends at a batch it has not passed: above the watermark, or past the budget. */
  const endsAt = (header: BatchHeader): boolean => {
    const lastOffset = header.baseOffset + header.lastOffsetDelta;
    if (lastOffset < nextOffset) return false;
    // At the high watermark: what lies above is not held by every in-sync replica yet (a
    // replicated watermark lies between batches; a batch that reaches past it waits whole).
    const ends = lastOffset >= endOffset || (batches.length > 0 && sizeBytes + header.lengthBytes > maxBytes);
    if (ends) full = true;
    return ends;
  };
  // The read's end is known from a batch's header: the walk stops there without reading the batch.
  const visit: BatchVisitor = Object.assign((batch: Uint8Array, header: BatchHeader) => {
    const lastOffset = header.baseOffset + header.lastOffsetDelta;
    if (lastOffset < nextOffset) return true;
    if (endsAt(header)) return false;
    batches.push(batch);
    sizeBytes += batch.length;
    nextOffset = lastOffset + 1;
    return sizeBytes < maxBytes;
  }, { refuses: endsAt });
  try {
    for (const segment of segments) {
      if (full || sizeBytes >= maxBytes) break;
      if (segment.visibleSizeBytes === 0 || segment.visibleEndOffset < nextOffset) continue;
      const relativeOffset = Math.max(0, nextOffset - segment.startOffset);
      const entry = (await indexOf(context, segment))?.floorByOffset(relativeOffset) ?? segmentStart;
      const before = batches.length;
      if (segment.location === "remote") {
        // A fetch's budget is bytes it takes whole: its first window is as large as a window gets.
        const want = () => maxBytes - sizeBytes;
        await context.remote.walk(segment, entry, want, visit, borrowed, remoteWindowMaxBytes);
      } else {
        const windowBytes = Math.min(maxBytes - sizeBytes + 16 * 1024, localWindowBytesMax);
        await scanLocal(context, segment, entry.position, windowBytes, visit, windows.take);
      }
      // A segment that gave nothing more although it holds the offset stopped on the budget.
      if (batches.length === before && sizeBytes > 0) break;
    }
  } catch (error) {
    windows.giveBack();
    throw error;
  }
  return {
    batches,
    sizeBytes,
    nextOffset,
    release: () => {
      for (const chunk of borrowed.splice(0)) context.remote.reader?.recycle?.(chunk);
      windows.giveBack();
    },
  };
}

/** Windows lent by the pool for one read, given back together once its batches are written. */
class LentWindows {
  readonly #pool: BufferPool | undefined;
  readonly #lent: Uint8Array[] = [];

  constructor(pool: BufferPool | undefined) {
    this.#pool = pool;
  }

  /** A window of `lengthBytes`: the pool's while it has room, else a buffer of its own. */
  readonly take = (lengthBytes: number): Uint8Array => {
    const pooled = this.#pool?.takeBounded(lengthBytes) ?? null;
    if (pooled === null) return new Uint8Array(lengthBytes);
    this.#lent.push(pooled);
    return pooled;
  };

  giveBack(): void {
    for (const window of this.#lent.splice(0)) this.#pool!.give(window);
  }
}
