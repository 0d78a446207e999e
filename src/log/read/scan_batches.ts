import { yieldToReactor } from "../../runtime/cooperation/piece_gate.ts";
import type { DiskFile } from "../../runtime/disk/disk.ts";
import { readUpToInto } from "../../runtime/disk/file_ops.ts";
import {
  type BatchHeader,
  batchHeaderBytes,
  decodeBatchHeader,
  isPlausibleHeader,
  verifyBatch,
} from "../batch/batch_codec.ts";

/** Smallest and largest read the scanner issues; a larger batch is read whole. */
export const readWindowBytesMin = 64 * 1024;
export const readWindowBytesMax = 1024 * 1024;

export type ScanEnd =
  | { kind: "end"; position: number }
  | { kind: "stopped"; position: number }
  /** The bytes at `position` are not a whole batch before `endPosition`: a torn tail. */
  | { kind: "torn"; position: number }
  /** A whole batch at `position` with a bad header or checksum. */
  | { kind: "corrupt"; position: number; header: BatchHeader | null };

export interface ScanOptions {
  /** Verify every batch's CRC32C (recovery and remote reads); local serving skips it. */
  verify: boolean;
  /** First read size; grows to the window maximum as batches are consumed. */
  windowBytes?: number;
  /**
   * Where each read window comes from (a pool's buffer, given back by the caller once nothing reads
   * the batches in it); a fresh buffer each when absent.
   */
  takeWindow?: (lengthBytes: number) => Uint8Array;
}

/**
 * Sees each batch a scan passes, at its position; false (or a promise of it) stops the scan. With
 * `refuses`, a batch whose header it answers true for ends the scan before the batch is read whole
 * (`BatchVisitor`, remote_walk.ts).
 */
export type ScannedBatchVisitor =
  & ((batch: Uint8Array, header: BatchHeader, position: number) => boolean | Promise<boolean>)
  & { readonly refuses?: (header: BatchHeader) => boolean };

/**
 * Walks whole batches of a log file from `position` to `endPosition`, reading 64 KiB to 1 MiB at a
 * time and yielding to the event loop after each verified window, so a scan of a 1 GiB segment
 * never holds the loop for more than one piece. `onBatch` returns false to stop early, or a promise
 * of that when it works on a batch in pieces (the window stays the scan's meanwhile).
 */
export async function scanBatches(
  file: DiskFile,
  position: number,
  endPosition: number,
  options: ScanOptions,
  onBatch: ScannedBatchVisitor,
): Promise<ScanEnd> {
  let windowBytes = Math.max(
    readWindowBytesMin,
    Math.min(options.windowBytes ?? readWindowBytesMin, readWindowBytesMax),
  );
  let window: Uint8Array = new Uint8Array(0);
  let windowStart = position;
  let pos = position;
  // Every pass consumes one batch or returns, so the log's size bounds the loop.
  while (pos < endPosition) {
    if (pos + batchHeaderBytes > endPosition) return { kind: "torn", position: pos };
    if (windowStart + window.length < pos + batchHeaderBytes) {
      if (options.verify && window.length > 0) await yieldToReactor();
      window = await readWindow(file, pos, Math.min(windowBytes, endPosition - pos), options);
      windowStart = pos;
      windowBytes = Math.min(windowBytes * 2, readWindowBytesMax);
    }
    const header = decodeBatchHeader(window, pos - windowStart)!;
    if (!isPlausibleHeader(header)) {
      return pos + header.lengthBytes > endPosition || header.lengthBytes < batchHeaderBytes
        ? { kind: "torn", position: pos }
        : { kind: "corrupt", position: pos, header: null };
    }
    if (pos + header.lengthBytes > endPosition) return { kind: "torn", position: pos };
    if (onBatch.refuses?.(header)) return { kind: "stopped", position: pos };
    if (windowStart + window.length < pos + header.lengthBytes) {
      if (options.verify) await yieldToReactor();
      window = await readWindow(
        file,
        pos,
        Math.min(Math.max(windowBytes, header.lengthBytes), endPosition - pos),
        options,
      );
      windowStart = pos;
    }
    const batch = window.subarray(pos - windowStart, pos - windowStart + header.lengthBytes);
    if (options.verify && !verifyBatch(batch)) return { kind: "corrupt", position: pos, header };
    // A visitor that decodes in pieces answers later; one that answers at once is not awaited, so
    // a scan of such batches keeps its turns of the loop as they were.
    const more = onBatch(batch, header, pos);
    if (!(typeof more === "boolean" ? more : await more)) return { kind: "stopped", position: pos };
    pos += header.lengthBytes;
  }
  return { kind: "end", position: pos };
}

/** `lengthBytes` at `position` (fewer only at the file's end), into a window from `takeWindow`. */
async function readWindow(
  file: DiskFile,
  position: number,
  lengthBytes: number,
  options: ScanOptions,
): Promise<Uint8Array> {
  const buffer = options.takeWindow?.(lengthBytes) ?? new Uint8Array(lengthBytes);
  return buffer.subarray(0, await readUpToInto(file, buffer, position));
}
