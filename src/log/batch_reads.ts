import { assert } from "../runtime/assert.ts";
import type { BufferPool } from "../runtime/buffer_pool.ts";
import type { RemoteChunk } from "./remote_reader.ts";
import type { BatchVisitor } from "./remote_walk.ts";
import { type ReadContext, scanLocal } from "./segment_reads.ts";
import type { Segment } from "./segment.ts";

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
  const visit: BatchVisitor = (batch, header) => {
    const lastOffset = header.baseOffset + header.lastOffsetDelta;
    if (lastOffset < nextOffset) return true;
    // At the high watermark: what lies above is not held by every in-sync replica yet (a
    // replicated watermark lies between batches; a batch that reaches past it waits whole).
    if (lastOffset >= endOffset) {
      full = true;
      return false;
    }
    if (batches.length > 0 && sizeBytes + batch.length > maxBytes) {
      full = true;
      return false;
    }
    batches.push(batch);
    sizeBytes += batch.length;
    nextOffset = lastOffset + 1;
    return sizeBytes < maxBytes;
  };
  try {
    for (const segment of segments) {
      if (full || sizeBytes >= maxBytes) break;
      if (segment.visibleSizeBytes === 0 || segment.visibleEndOffset < nextOffset) continue;
      if (segment.location === "remote") await context.remote.reader?.ensureIndex(segment);
      const entry = segment.index.floorByOffset(Math.max(0, nextOffset - segment.startOffset));
      const before = batches.length;
      if (segment.location === "remote") {
        await context.remote.walk(segment, entry, () => maxBytes - sizeBytes, visit, borrowed);
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
