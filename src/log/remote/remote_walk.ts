import { assert } from "../../runtime/assert.ts";
import type { PieceGate } from "../../runtime/cooperation/piece_gate.ts";
import { type BatchHeader, decodeBatchHeader, isPlausibleHeader, verifyBatch } from "../batch/batch_codec.ts";
import { RemoteReadUnavailableError } from "../log_errors.ts";
import { type RemoteChunk, RemoteCorruptError, type RemoteReader } from "./remote_reader.ts";
import type { Segment } from "../segment/segment.ts";
import type { IndexEntry } from "../segment/sparse_index.ts";

/** The bytes a remote walk asks for first (the remote reader adds room to finish a batch). */
export const remoteWindowFirstBytes = 64 * 1024;
/** The room the remote reader adds to a window, so that the window's last batch likely ends in it. */
export const remoteWindowRoomBytes = 64 * 1024;
/**
 * The most a remote walk asks for at once while whole batches fit: with the reader's room, one
 * read of 1 MiB, which the read worker serves in one round trip (a batch larger than that still gets
 * a window that holds it).
 */
export const remoteWindowMaxBytes = 1024 * 1024 - remoteWindowRoomBytes;

/**
 * Sees each batch a walk passes; false stops the walk. A visitor that works on a batch in pieces
 * (decoding a compressed one) answers with a promise; the walk awaits only such an answer. One that
 * can tell from a batch's header alone that it stops there (a fetch whose budget the batch would
 * pass) says so through `refuses`: the walk then stops before that batch without reading it whole.
 */
export type BatchVisitor = ((batch: Uint8Array, header: BatchHeader) => boolean | Promise<boolean>) & {
  readonly refuses?: (header: BatchHeader) => boolean;
};

/** Where a walk of one window ended, and the offset expected next. */
interface Walked {
  kind: "end" | "stopped" | "short" | "corrupt";
  next: number;
  nextOffset: number;
}

/**
 * Walks evicted segments window by window through the remote reader (the tier service's chunk
 * cache, attached once it exists). Without a reader, such reads answer `RemoteReadUnavailableError`.
 */
export class RemoteWalk {
  readonly #label: string;
  #remote: RemoteReader | null = null;
  /** The piece gate: walking a remote chunk waits for a turn (absent in some tests). */
  #gate: PieceGate | null = null;

  constructor(label: string) {
    this.#label = label;
  }

  attach(reader: RemoteReader, gate?: PieceGate): void {
    this.#remote = reader;
    this.#gate = gate ?? null;
  }

  /** The attached reader, or null. */
  get reader(): RemoteReader | null {
    return this.#remote;
  }

  /**
   * Walks a remote segment chunk by chunk through the remote reader, from an index entry. Every
   * batch's CRC32C is checked, and its base offset, which the CRC32C does not cover, must follow the
   * one before (the first the index entry's): a mismatch drops the chunk and fetches it once more; a
   * second is never served. Windows the visitor may keep views into go to `borrowed` (given back
   * by the read's `release`); with `borrowed` null every window goes back at once. The first window
   * asks for `firstWindowBytes` at most (a read that will use its whole budget, a Kafka fetch's,
   * starts large; a poll of a few messages starts modest).
   */
  async walk(
    segment: Segment,
    from: IndexEntry,
    wantBytes: () => number,
    visit: BatchVisitor,
    borrowed: RemoteChunk[] | null,
    firstWindowBytes = remoteWindowFirstBytes,
  ): Promise<void> {
    const remote = this.#remote;
    if (remote === null) throw new RemoteReadUnavailableError(this.#label, segment.startOffset);
    let pos = from.position;
    let expectedOffset = segment.startOffset + from.relativeOffset;
    // A poll's budget is often far more than its count needs (1 MiB by default for 100 messages):
    // the first window is modest and each further one doubles, up to what the poll still wants,
    // so a small poll does not read and allocate a megabyte and a large one still takes few windows.
    let windowBytes = Math.min(wantBytes(), firstWindowBytes, remoteWindowMaxBytes);
    /** Where the last corrupt batch was found: a second failure there is never served. */
    let droppedAt: number | null = null;
    /** The last window that held no whole batch: a larger one at the same place must bring more. */
    let lastShort: { position: number; bytes: number } | null = null;
    // Each pass consumes at least one batch, or doubles the window and gets more bytes than the last
    // at that position (bounded by the segment's size; no more bytes is corrupt), or drops a corrupt
    // chunk once per position, and positions only grow: the loop ends.
    while (pos < segment.sizeBytes) {
      const chunk = await remote.chunkAt(segment, pos, windowBytes);
      // Checking and decoding a window is this read's piece: it runs on a turn of the piece gate.
      if (this.#gate !== null) await this.#gate.turn();
      const walking = walkWindow(chunk, pos, expectedOffset, visit);
      const walked = walking instanceof Promise ? await walking : walking;
      // A window the visitor may have kept views into is the read's until it is released; one that
      // did not hold a whole batch was not visited and goes back at once.
      if (walked.kind === "short" || borrowed === null) remote.recycle?.(chunk);
      else borrowed.push(chunk);
      if (walked.kind === "stopped") return;
      if (walked.kind === "short") {
        // A larger window that brought no more bytes than the last one here never will: the
        // reader's bytes end inside a batch (an object or cache file shorter than it should be).
        if (lastShort !== null && lastShort.position === pos && chunk.bytes.length <= lastShort.bytes) {
          throw new RemoteCorruptError(
            this.#label,
            segment.startOffset,
            pos,
            "no whole batch before its end",
          );
        }
        lastShort = { position: pos, bytes: chunk.bytes.length };
        // A batch runs past the window: the same position again, with a larger window.
        windowBytes = Math.max(windowBytes * 2, chunk.bytes.length * 2);
        continue;
      }
      if (walked.kind === "corrupt") {
        // The batches before the bad one were good and are visited already: the retry starts at the
        // bad one (starting over at `pos` would hand them to the reader twice).
        if (walked.next === droppedAt) {
          throw new RemoteCorruptError(this.#label, segment.startOffset, walked.next);
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
      windowBytes = Math.min(wantBytes(), windowBytes * 2, remoteWindowMaxBytes);
    }
  }
}

/**
 * Walks one window as `walkChunk` does, at once when every visit answers at once; when one answers
 * with a promise, the walk waits for it and goes on after that batch.
 */
function walkWindow(
  chunk: RemoteChunk,
  position: number,
  expectedOffset: number,
  visit: BatchVisitor,
): Walked | Promise<Walked> {
  const walked = walkChunk(chunk, position, expectedOffset, visit, position);
  return walked.kind === "pending" ? resumeWindow(chunk, position, walked, visit) : walked;
}

async function resumeWindow(
  chunk: RemoteChunk,
  position: number,
  pending: Walked | PendingVisit,
  visit: BatchVisitor,
): Promise<Walked> {
  let walked = pending;
  // Each pass visits at least one batch of the window, so the window's batches bound the loop.
  while (walked.kind === "pending") {
    if (!(await walked.more)) return { kind: "stopped", next: walked.next, nextOffset: walked.nextOffset };
    walked = walkChunk(chunk, walked.next, walked.nextOffset, visit, position);
  }
  return walked;
}

/** A visit that answered with a promise: the walk goes on from `next` once it says true. */
interface PendingVisit {
  kind: "pending";
  more: Promise<boolean>;
  next: number;
  nextOffset: number;
}

/**
 * Walks whole batches of one chunk from `position`, checking each one's CRC32C and that its base
 * offset is `expectedOffset`, then the one after the batch before. Chunks start and end on batch
 * boundaries, so a batch running past the chunk's end is corruption too. `windowPosition` is where
 * the window's walk began (before the batches an earlier call visited).
 */
function walkChunk(
  chunk: RemoteChunk,
  position: number,
  expectedOffset: number,
  visit: BatchVisitor,
  windowPosition: number,
): Walked | PendingVisit {
  let at = position - chunk.start;
  let nextOffset = expectedOffset;
  const windowEnd = chunk.start + chunk.bytes.length;
  // A header cut by the window's end, or a batch running past it, is read again in a larger window
  // ("short" when not even one batch fit); past the chunk's own end (a batch boundary) it is corrupt.
  const cut = () => ({
    kind: at === windowPosition - chunk.start ? "short" as const : "end" as const,
    next: chunk.start + at,
    nextOffset,
  });
  while (at < chunk.bytes.length) {
    const header = decodeBatchHeader(chunk.bytes, at);
    if (header === null && windowEnd < chunk.end) return cut();
    const corrupt = { kind: "corrupt" as const, next: chunk.start + at, nextOffset };
    if (header === null || !isPlausibleHeader(header)) return corrupt;
    // A batch the visitor would not take is neither read whole nor checked: the walk ends before it.
    if (visit.refuses?.(header)) return { kind: "stopped", next: chunk.start + at, nextOffset };
    if (at + header.lengthBytes > chunk.bytes.length) {
      if (chunk.start + at + header.lengthBytes > chunk.end) return corrupt;
      return cut();
    }
    const batch = chunk.bytes.subarray(at, at + header.lengthBytes);
    if (header.baseOffset !== nextOffset || !verifyBatch(batch)) return corrupt;
    nextOffset = header.baseOffset + header.lastOffsetDelta + 1;
    const more = visit(batch, header);
    if (typeof more !== "boolean") {
      return { kind: "pending", more, next: chunk.start + at + header.lengthBytes, nextOffset };
    }
    if (!more) return { kind: "stopped", next: chunk.start + at + header.lengthBytes, nextOffset };
    at += header.lengthBytes;
  }
  return { kind: "end", next: chunk.start + at, nextOffset };
}
