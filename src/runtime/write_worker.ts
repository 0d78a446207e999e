import { Worker } from "node:worker_threads";
import { assert } from "./assert.ts";
import { Semaphore } from "./semaphore.ts";

/**
 * Large file writes on a thread of their own. Under Deno, `node:fs` writes run on the event loop's
 * thread, and the kernel's copy of the bytes into the page cache is then the loop's work: in the
 * pump benchmark's upload phase 75 % of the loop's time, about 3.3 ms per MB on this machine's
 * fresh memory (docs/TUNING.md). The worker writes through file descriptors of its own, opened by
 * path on a file's first large write and closed with the file; the loop only copies each piece
 * into one of a few shared slots (a memcpy into memory it already holds) and waits for the answer.
 * It runs unchanged on Node, where it only moves the write from libuv's pool to this thread.
 */
export class WriteWorker {
  readonly slotBytes: number;
  readonly slotsMax: number;
  readonly #slots: Uint8Array[];
  readonly #freeSlots: number[];
  readonly #slotTurns: Semaphore;
  /** Writes sent and not answered, by sequence number; at most `slotsMax` (one per slot). */
  readonly #pending = new Map<number, Pending>();
  /** Files the worker holds a descriptor of: what `release` must close there. */
  readonly #openIds = new Set<number>();
  #worker: Worker | null = null;
  #nextSeq = 1;

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
    this.#slots = Array.from(
      { length: options.slotsMax },
      () => new Uint8Array(new SharedArrayBuffer(options.slotBytes)),
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

  /**
   * Writes all of `data` at `position` of the file `file.path`, known to the worker as
   * `file.id`, one slot at a time. The worker opens the file by name on its first write and
   * refuses it unless its inode is `file.inode`, so a file renamed or replaced since the caller
   * opened it is an error rather than a write to another file. Rejects with the worker's error (its
   * `code` kept, e.g. ENOSPC).
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
      await this.#send(seq, {
        op: "write",
        seq,
        fileId,
        path,
        inode,
        slot: slotBytes.buffer,
        length,
        position,
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

/** A file as the worker knows it: an id of the caller's, its path, and the inode it must be. */
export interface WorkerFile {
  id: number;
  path: string;
  inode: number;
}

interface Pending {
  resolve: () => void;
  reject: (error: Error) => void;
}

interface Answer {
  seq: number;
  error: { code: string | undefined; message: string } | null;
}

/**
 * The worker's whole program, plain JavaScript so that both runtimes run it without a loader. It
 * answers every request, in order; a write loops until every byte is written (a short write is
 * legal), bounded by the byte count since each pass writes at least one.
 */
const workerSource = `
const { parentPort } = require("node:worker_threads");
const fs = require("node:fs");
const fds = new Map();
parentPort.on("message", (m) => {
  try {
    if (m.op === "close") {
      const fd = fds.get(m.fileId);
      fds.delete(m.fileId);
      if (fd !== undefined) fs.closeSync(fd);
    } else {
      let fd = fds.get(m.fileId);
      if (fd === undefined) {
        fd = fs.openSync(m.path, "r+");
        if (fs.fstatSync(fd).ino !== m.inode) {
          fs.closeSync(fd);
          throw new Error("Cannot write " + m.path + ": it is no longer the file that was opened");
        }
        fds.set(m.fileId, fd);
      }
      const bytes = new Uint8Array(m.slot, 0, m.length);
      for (let written = 0; written < m.length;) {
        const n = fs.writeSync(fd, bytes, written, m.length - written, m.position + written);
        if (n <= 0) throw new Error("the write made no progress");
        written += n;
      }
    }
    parentPort.postMessage({ seq: m.seq, error: null });
  } catch (error) {
    parentPort.postMessage({ seq: m.seq, error: { code: error && error.code, message: String(error && error.message) } });
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
