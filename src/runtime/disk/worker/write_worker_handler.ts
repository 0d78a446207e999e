import { assert } from "../../assert.ts";
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

/**
 * Writes the first `length` bytes of slot `slot` at `position` of a file; with `direct`, their
 * aligned prefix around the page cache (the caller sends it only for a part that starts aligned).
 */
export interface WriteRequest extends SlotRequest {
  op: "write";
}

export interface WriteAnswer extends WorkerAnswer {
  /** How many of the write's bytes went around the page cache, a failed write's included. */
  directBytes: number;
}

/**
 * The write worker's program, over an injected `WorkerFs` and the slots' memory: `answer` takes one
 * request and returns its answer, a failure included, so the thread around it only passes messages.
 * It opens files only as the caller's (by name, with the same inode): a file removed or replaced
 * under its name since the caller opened it is an error, never a write to another file. A write
 * loops until every byte is written (a short write is legal), bounded by the byte count since each
 * pass writes at least one. A direct write that the file system refuses (EINVAL: no `O_DIRECT`
 * there, or a stricter alignment) or cuts short leaves the rest to the buffered descriptor, and a
 * refused file is written buffered from then on.
 */
export class WriteHandler {
  readonly #fs: WorkerFs;
  readonly #files: WorkerFileTable;
  readonly #slots: SlotViews;
  /** The current request's bytes written around the page cache: what a failure answers with too. */
  #directBytes = 0;

  constructor(fs: WorkerFs, data: FileWorkerData) {
    this.#fs = fs;
    this.#files = new WorkerFileTable(fs, "write worker");
    this.#slots = new SlotViews(data);
  }

  /** Gauge: files the worker knows. */
  get knownFiles(): number {
    return this.#files.size;
  }

  answer(request: Numbered<WriteRequest | CloseRequest>): WriteAnswer {
    this.#directBytes = 0;
    try {
      if (request.op === "close") this.#files.close(request.fileId);
      else this.#write(request);
      return { seq: request.seq, directBytes: this.#directBytes, error: null };
    } catch (error) {
      return { seq: request.seq, directBytes: this.#directBytes, error: failureOf(error) };
    }
  }

  #write(request: WriteRequest): void {
    const file = this.#files.fileOf(request);
    assert(file !== null, "the write worker never marks a file stale");
    let fd = this.#files.bufferedFd(request.fileId);
    if (fd === undefined) {
      fd = this.#checkedOpen(file, "r+");
      this.#files.keepBufferedFd(request.fileId, fd);
    }
    const bytes = this.#slots.slot(request.slot);
    if (request.direct) this.#directBytes = this.#writeDirect(request, file, bytes);
    for (let written = this.#directBytes; written < request.length;) {
      const n = this.#fs.writeSync(fd, bytes, written, request.length - written, request.position + written);
      if (n <= 0) throw new Error(`Cannot write ${file.path}: the write made no progress`);
      written += n;
    }
  }

  /** The file by its name, refused unless it is still the caller's. */
  #checkedOpen(file: NamedFile, flags: number | string): number {
    const fd = this.#files.openSame(file, flags);
    if (fd === null) throw new Error(`Cannot write ${file.path}: it is no longer the file that was opened`);
    return fd;
  }

  /** A direct descriptor, or null (written buffered) where the file system refuses `O_DIRECT`. */
  #directFd(fileId: number, file: NamedFile): number | null {
    const kept = this.#files.directFd(fileId);
    if (kept !== undefined) return kept;
    const { O_WRONLY, O_DIRECT } = this.#fs.constants;
    let fd: number | null = null;
    try {
      if (O_DIRECT !== undefined) fd = this.#checkedOpen(file, O_WRONLY | O_DIRECT);
    } catch (error) {
      if (errorCode(error) !== "EINVAL") throw error;
    }
    this.#files.keepDirectFd(fileId, fd);
    return fd;
  }

  /** Bytes written around the page cache: the part's aligned prefix, or fewer; 0 when refused. */
  #writeDirect(request: WriteRequest, file: NamedFile, bytes: Uint8Array): number {
    const fd = this.#directFd(request.fileId, file);
    if (fd === null) return 0;
    const alignedBytes = request.length - (request.length % directIoAlignBytes);
    try {
      return this.#fs.writeSync(fd, bytes, 0, alignedBytes, request.position);
    } catch (error) {
      if (errorCode(error) !== "EINVAL") throw error;
      this.#files.refuseDirect(request.fileId);
      return 0;
    }
  }
}
