import { isBug } from "../../assert.ts";
import { directIoAlignBytes } from "../disk.ts";
import {
  type CloseRequest,
  errorCode,
  failureOf,
  type FileWorkerData,
  type Numbered,
  type SlotRequest,
  SlotViews,
  type WorkerAnswer,
} from "./file_worker_protocol.ts";
import { type NamedFile, WorkerFileTable, type WorkerFs } from "./worker_file_table.ts";

/** Reads `length` bytes at `position` of a file into slot `slot`; around the page cache if `direct`. */
export interface ReadRequest extends SlotRequest {
  op: "read";
}

/** What a read found, without the request's number. */
interface ReadPart {
  /** Bytes of the part read, fewer than asked only at the end of the file. */
  bytesRead: number;
  /** Where in the slot the part starts: a direct read starts on the aligned position before it. */
  skip: number;
  /** Whether the part came around the page cache. */
  direct: boolean;
  /** The worker could not open the caller's file by its name: removed, or another file there now. */
  stale: boolean;
}

export interface ReadAnswer extends WorkerAnswer, ReadPart {}

const nothingRead: ReadPart = { bytesRead: 0, skip: 0, direct: false, stale: false };
const staleRead: ReadPart = { bytesRead: 0, skip: 0, direct: false, stale: true };

/**
 * The read worker's program, over an injected `WorkerFs` and the slots' memory: `answer` takes one
 * request and returns its answer, a failure included, so the thread around it only passes messages.
 * It opens files only as the caller's (by name, with the same inode); a file it cannot have so is
 * stale, and every read of it answers so until it is closed. A buffered read loops until the part
 * is read or the file ends, bounded by the byte count since each pass but the last reads at least
 * one byte. A direct read reads the aligned span around the part in one pass; one the file system
 * refuses (EINVAL: no `O_DIRECT` there, or a stricter alignment) is read buffered, and so is the file
 * from then on, as it is where a direct descriptor cannot be had at all: it is only a faster way.
 */
export class ReadHandler {
  readonly #fs: WorkerFs;
  readonly #files: WorkerFileTable;
  readonly #slots: SlotViews;

  constructor(fs: WorkerFs, data: FileWorkerData) {
    this.#fs = fs;
    this.#files = new WorkerFileTable(fs, "read worker");
    this.#slots = new SlotViews(data);
  }

  /** Gauge: files the worker knows, stale ones included. */
  get knownFiles(): number {
    return this.#files.size;
  }

  answer(request: Numbered<ReadRequest | CloseRequest>): ReadAnswer {
    try {
      return { seq: request.seq, ...this.#read(request), error: null };
    } catch (error) {
      return { seq: request.seq, ...nothingRead, error: failureOf(error) };
    }
  }

  #read(request: ReadRequest | CloseRequest): ReadPart {
    if (request.op === "close") {
      this.#files.close(request.fileId);
      return nothingRead;
    }
    const file = this.#files.fileOf(request);
    if (file === null) return staleRead;
    const slot = this.#slots.slot(request.slot);
    if (request.direct) {
      const part = this.#readDirect(request, file, slot);
      if (part !== null) return { bytesRead: part.bytesRead, skip: part.skip, direct: true, stale: false };
    }
    const bytesRead = this.#readBuffered(request, file, slot);
    return bytesRead === null ? staleRead : { bytesRead, skip: 0, direct: false, stale: false };
  }

  /** The file by its name if it is still the caller's; null if it was removed or replaced. */
  #openIfSame(file: NamedFile, flags: number): number | null {
    try {
      return this.#files.openSame(file, flags);
    } catch (error) {
      if (errorCode(error) === "ENOENT") return null;
      throw error;
    }
  }

  /** A direct descriptor, or null (read buffered) where it cannot be had. */
  #directFd(fileId: number, file: NamedFile): number | null {
    const kept = this.#files.directFd(fileId);
    if (kept !== undefined) return kept;
    const { O_RDONLY, O_DIRECT } = this.#fs.constants;
    let fd: number | null = null;
    try {
      if (O_DIRECT !== undefined) fd = this.#openIfSame(file, O_RDONLY | O_DIRECT);
    } catch (error) {
      if (isBug(error)) throw error;
      // Direct reads are only a faster way to the same bytes: refused (EINVAL, EMFILE, a file gone),
      // the file is read through the cache, which the direct-read byte count shows.
      fd = null;
    }
    this.#files.keepDirectFd(fileId, fd);
    return fd;
  }

  /** The part read around the page cache and where it starts in the slot; null when it must be read buffered. */
  #readDirect(
    request: ReadRequest,
    file: NamedFile,
    slot: Uint8Array,
  ): { bytesRead: number; skip: number } | null {
    const fd = this.#directFd(request.fileId, file);
    if (fd === null) return null;
    const skip = request.position % directIoAlignBytes;
    const span = Math.ceil((skip + request.length) / directIoAlignBytes) * directIoAlignBytes;
    try {
      const n = this.#fs.readSync(fd, slot, 0, span, request.position - skip);
      return { bytesRead: Math.max(0, Math.min(n - skip, request.length)), skip };
    } catch (error) {
      if (errorCode(error) !== "EINVAL") throw error;
      this.#files.refuseDirect(request.fileId);
      return null;
    }
  }

  /** The count read, or null when the file cannot be opened as the caller's (it is stale from then on). */
  #readBuffered(request: ReadRequest, file: NamedFile, slot: Uint8Array): number | null {
    let fd = this.#files.bufferedFd(request.fileId);
    if (fd === undefined) {
      const opened = this.#openIfSame(file, this.#fs.constants.O_RDONLY);
      if (opened === null) {
        this.#files.markStale(request.fileId);
        return null;
      }
      fd = opened;
      this.#files.keepBufferedFd(request.fileId, fd);
    }
    let done = 0;
    while (done < request.length) {
      const n = this.#fs.readSync(fd, slot, done, request.length - done, request.position + done);
      if (n <= 0) break;
      done += n;
    }
    return done;
  }
}
