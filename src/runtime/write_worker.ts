import { Worker } from "node:worker_threads";
import { assert } from "./assert.ts";
import { directIoAlignBytes } from "./disk.ts";
import { Semaphore } from "./semaphore.ts";

/**
 * Large file writes on a thread of their own. Under Deno, `node:fs` writes run on the event loop's
 * thread, and the kernel's copy of the bytes into the page cache is then the loop's work: in the
 * pump benchmark's upload phase 75 % of the loop's time, about 3.3 ms per MB on this machine's
 * fresh memory (docs/TUNING.md). The worker writes through file descriptors of its own, opened by
 * path on a file's first large write and closed with the file; the loop only copies each piece
 * into one of a few shared slots (a memcpy into memory it already holds) and waits for the answer.
 * It runs unchanged on Node, where it only moves the write from libuv's pool to this thread.
 *
 * A file opened with `bypassCache` gets a second descriptor there, opened with `O_DIRECT`, for its
 * aligned writes: the device then reads the slot itself, and nothing is copied into the page cache
 * (on this machine that copy into fresh memory was the upload's limit; docs/TUNING.md, item 31).
 * Direct writes need aligned memory as well, so the slots are carved from one shared WebAssembly
 * memory, whose buffer starts on a page. Where the file system refuses `O_DIRECT`, writes are
 * buffered as before.
 */
export class WriteWorker {
  readonly slotBytes: number;
  readonly slotsMax: number;
  /** The slots' memory, posted with each write; slot `i` starts at `i * #slotStrideBytes`. */
  readonly #memory: SharedArrayBuffer;
  readonly #slotStrideBytes: number;
  readonly #slots: Uint8Array[];
  readonly #freeSlots: number[];
  readonly #slotTurns: Semaphore;
  /** Writes sent and not answered, by sequence number; at most `slotsMax` (one per slot). */
  readonly #pending = new Map<number, Pending>();
  /** Files the worker holds a descriptor of: what `release` must close there. */
  readonly #openIds = new Set<number>();
  #worker: Worker | null = null;
  #nextSeq = 1;
  #directBytes = 0;

  constructor(options: { slotBytes: number; slotsMax: number; waitersMax: number }) {
    assert(
      Number.isInteger(options.slotBytes) && options.slotBytes >= 1,
      "slotBytes must be a positive integer",
    );
    assert(
      Number.isInteger(options.slotsMax) && options.slotsMax >= 1,
      "slotsMax must be a positive integer",
    );
    this.slotBytes = options.slotBytes;
    this.slotsMax = options.slotsMax;
    this.#slotStrideBytes = Math.ceil(options.slotBytes / directIoAlignBytes) * directIoAlignBytes;
    const wasmPageBytes = 64 * 1024;
    const pages = Math.ceil((this.#slotStrideBytes * options.slotsMax) / wasmPageBytes);
    const memory: unknown = new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true }).buffer;
    assert(memory instanceof SharedArrayBuffer, "a shared WebAssembly memory's buffer is shared");
    this.#memory = memory;
    this.#slots = Array.from(
      { length: options.slotsMax },
      (_, i) => new Uint8Array(this.#memory, i * this.#slotStrideBytes, options.slotBytes),
    );
    this.#freeSlots = this.#slots.map((_, i) => i);
    this.#slotTurns = new Semaphore({
      permits: options.slotsMax,
      waitersMax: options.waitersMax,
      name: "write worker slot",
    });
  }

  /** Gauge: writes handed to the worker and not yet answered. */
  get inFlight(): number {
    return this.#pending.size;
  }

  /** Gauge: files the worker holds open. */
  get openFiles(): number {
    return this.#openIds.size;
  }

  /** Counter: bytes written around the page cache (`bypassCache`), since the worker was made. */
  get directBytes(): number {
    return this.#directBytes;
  }

  /**
   * Writes all of `data` at `position` of the file `file.path`, known to the worker as
   * `file.id`, one slot at a time. The worker opens the file by name on its first write and
   * refuses it unless its inode is `file.inode`, so a file renamed or replaced since the caller
   * opened it is an error rather than a write to another file. Rejects with the worker's error (its
   * `code` kept, e.g. ENOSPC). With `file.bypassCache`, each slot's part that starts on
   * `directIoAlignBytes` has its aligned prefix written around the page cache, the rest through it.
   */
  async write(file: WorkerFile, data: Uint8Array, position: number): Promise<void> {
    for (let at = 0; at < data.length; at += this.slotBytes) {
      const part = data.subarray(at, Math.min(data.length, at + this.slotBytes));
      await this.#writeOne(file, part, position + at);
    }
  }

  /** Closes the worker's descriptor of a file, if it opened one; answered before it resolves. */
  async release(fileId: number): Promise<void> {
    if (!this.#openIds.delete(fileId)) return;
    // A close takes a turn like a write, so requests in flight never exceed the slots.
    using _turn = await this.#slotTurns.acquire();
    const seq = this.#nextSeq++;
    await this.#send(seq, { op: "close", seq, fileId });
  }

  async #writeOne(file: WorkerFile, part: Uint8Array, position: number): Promise<void> {
    using _turn = await this.#slotTurns.acquire();
    const slot = this.#freeSlots.pop();
    assert(slot !== undefined, "a write worker slot is free when a turn is held");
    const slotBytes = this.#slots[slot]!;
    try {
      slotBytes.set(part);
      this.#openIds.add(file.id);
      const seq = this.#nextSeq++;
      const { id: fileId, path, inode } = file;
      const length = part.length;
      // The worker writes the part's aligned prefix direct and the rest buffered: a chunk file's
      // pieces end where batches end, so their lengths are seldom multiples of the alignment.
      const direct = file.bypassCache && position % directIoAlignBytes === 0 && length >= directIoAlignBytes;
      await this.#send(seq, {
        op: "write",
        seq,
        fileId,
        path,
        inode,
        memory: this.#memory,
        offset: slot * this.#slotStrideBytes,
        length,
        position,
        direct,
      });
    } finally {
      this.#freeSlots.push(slot);
    }
  }

  #send(seq: number, message: Record<string, unknown>): Promise<void> {
    const worker = this.#started();
    assert(this.#pending.size < this.slotsMax, "write worker requests in flight exceed its turns");
    return new Promise<void>((resolve, reject) => {
      this.#pending.set(seq, { resolve, reject });
      // Held open only while it owes answers: an idle worker never keeps the process alive.
      if (this.#pending.size === 1) worker.ref();
      try {
        worker.postMessage(message);
      } catch (error) {
        // Not sent, so never answered: it must not hold a place among the requests in flight.
        this.#pending.delete(seq);
        if (this.#pending.size === 0) worker.unref();
        reject(error as Error);
      }
    });
  }

  #started(): Worker {
    if (this.#worker !== null) return this.#worker;
    const worker = new Worker(workerSource, { eval: true });
    worker.on("message", (answer: Answer) => this.#answered(answer));
    worker.on("error", (error: Error) => this.#failAll(error));
    worker.on(
      "exit",
      (code: number) => this.#failAll(new Error(`the write worker exited with code ${code}`)),
    );
    worker.unref();
    this.#worker = worker;
    return worker;
  }

  #answered(answer: Answer): void {
    const pending = this.#pending.get(answer.seq);
    assert(pending !== undefined, `the write worker answered request ${answer.seq}, which is not pending`);
    this.#pending.delete(answer.seq);
    if (this.#pending.size === 0) this.#worker?.unref();
    this.#directBytes += answer.directBytes;
    if (answer.error === null) pending.resolve();
    else pending.reject(Object.assign(new Error(answer.error.message), { code: answer.error.code }));
  }

  /** A worker that died fails what it owed; the next write starts a new one, with no file open. */
  #failAll(error: Error): void {
    this.#worker = null;
    this.#openIds.clear();
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }
}

/**
 * A file as the worker knows it: an id of the caller's, its path, the inode it must be, and whether
 * its aligned writes skip the page cache.
 */
export interface WorkerFile {
  id: number;
  path: string;
  inode: number;
  bypassCache: boolean;
}

interface Pending {
  resolve: () => void;
  reject: (error: Error) => void;
}

interface Answer {
  seq: number;
  /** How many of the write's bytes went around the page cache. */
  directBytes: number;
  error: { code: string | undefined; message: string } | null;
}

/**
 * The worker's whole program, plain JavaScript so that both runtimes run it without a loader. It
 * answers every request, in order; a write loops until every byte is written (a short write is
 * legal), bounded by the byte count since each pass writes at least one. A direct write that the
 * file system refuses (EINVAL: no `O_DIRECT` there, or a stricter alignment) or cuts short leaves the
 * rest to the buffered descriptor, and a refused file is written buffered from then on.
 */
const workerSource = `
const { parentPort } = require("node:worker_threads");
const fs = require("node:fs");
const { O_WRONLY, O_DIRECT } = fs.constants;
const fds = new Map();
const directFds = new Map();
function checkedOpen(m, flags) {
  const fd = fs.openSync(m.path, flags);
  if (fs.fstatSync(fd).ino !== m.inode) {
    fs.closeSync(fd);
    throw new Error("Cannot write " + m.path + ": it is no longer the file that was opened");
  }
  return fd;
}
function directFd(m) {
  if (directFds.has(m.fileId)) return directFds.get(m.fileId);
  let fd = null;
  try {
    if (O_DIRECT !== undefined) fd = checkedOpen(m, O_WRONLY | O_DIRECT);
  } catch (error) {
    if (error.code !== "EINVAL") throw error;
  }
  directFds.set(m.fileId, fd);
  return fd;
}
function writeDirect(m, bytes) {
  const fd = directFd(m);
  if (fd === null) return 0;
  const alignedBytes = bytes.length - (bytes.length % ${directIoAlignBytes});
  try {
    return fs.writeSync(fd, bytes, 0, alignedBytes, m.position);
  } catch (error) {
    if (error.code !== "EINVAL") throw error;
    fs.closeSync(fd);
    directFds.set(m.fileId, null);
    return 0;
  }
}
function close(fileId) {
  for (const map of [fds, directFds]) {
    const fd = map.get(fileId);
    map.delete(fileId);
    if (fd !== undefined && fd !== null) fs.closeSync(fd);
  }
}
parentPort.on("message", (m) => {
  let directBytes = 0;
  try {
    if (m.op === "close") {
      close(m.fileId);
    } else {
      let fd = fds.get(m.fileId);
      if (fd === undefined) {
        fd = checkedOpen(m, "r+");
        fds.set(m.fileId, fd);
      }
      const bytes = new Uint8Array(m.memory, m.offset, m.length);
      if (m.direct) directBytes = writeDirect(m, bytes);
      for (let written = directBytes; written < m.length;) {
        const n = fs.writeSync(fd, bytes, written, m.length - written, m.position + written);
        if (n <= 0) throw new Error("the write made no progress");
        written += n;
      }
    }
    parentPort.postMessage({ seq: m.seq, directBytes, error: null });
  } catch (error) {
    const answer = { code: error && error.code, message: String(error && error.message) };
    parentPort.postMessage({ seq: m.seq, directBytes, error: answer });
  }
});
`;

/** How big a write must be to go to the worker: below it, the round trip costs more than the copy. */
export const offLoopWriteBytesMin = 64 * 1024;

let shared: WriteWorker | null = null;

/**
 * The process's one write worker, like libuv's one thread pool: four 1 MiB slots, enough for the
 * shard's upload and chunk fills writing at once; more writers wait their turn, in order.
 */
export function sharedWriteWorker(): WriteWorker {
  shared ??= new WriteWorker({ slotBytes: 1024 * 1024, slotsMax: 4, waitersMax: 1024 });
  return shared;
}
