import { directIoAlignBytes } from "./disk.ts";
import { FileWorker, fileWorkerPrelude, type WorkerFile } from "./file_worker.ts";
import { type WorkerAnswer, WorkerError } from "./worker_requests.ts";

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
export class WriteWorker extends FileWorker<WriteAnswer> {
  constructor(options: { slotBytes: number; slotsMax: number; waitersMax: number }) {
    super({
      ...options,
      name: "write worker",
      source: workerSource,
      // The memory goes to the worker once, at its start, rather than with every write.
      workerOptions: (slots) => ({ workerData: { memory: slots.memory, strideBytes: slots.strideBytes } }),
    });
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

  async #writeOne(file: WorkerFile, part: Uint8Array, position: number): Promise<void> {
    using slot = await this.slots.acquire();
    slot.bytes.set(part);
    // The name goes with a file's first write only, as for reads (`read_worker.ts`); requests are
    // answered in order, so the first arrives before the ones after it.
    const known = this.openIds.has(file.id);
    this.openIds.add(file.id);
    const length = part.length;
    // The worker writes the part's aligned prefix direct and the rest buffered: a chunk file's
    // pieces end where batches end, so their lengths are seldom multiples of the alignment.
    const direct = file.bypassCache && position % directIoAlignBytes === 0 && length >= directIoAlignBytes;
    try {
      const answer = await this.requests.send({
        op: "write",
        fileId: file.id,
        ...(known ? {} : { path: file.path, inode: file.inode }),
        slot: slot.index,
        length,
        position,
        direct,
      });
      this.directBytesTotal += answer.directBytes;
    } catch (error) {
      // A write that failed part-way may still have written some of its bytes around the cache.
      if (error instanceof WorkerError) this.directBytesTotal += (error.answer as WriteAnswer).directBytes;
      throw error;
    }
  }
}

interface WriteAnswer extends WorkerAnswer {
  /** How many of the write's bytes went around the page cache. */
  directBytes: number;
}

/**
 * The worker's whole program, plain JavaScript so that both runtimes run it without a loader. It
 * answers every request, in order; a write loops until every byte is written (a short write is
 * legal), bounded by the byte count since each pass writes at least one. A direct write that the
 * file system refuses (EINVAL: no `O_DIRECT` there, or a stricter alignment) or cuts short leaves the
 * rest to the buffered descriptor, and a refused file is written buffered from then on.
 */
const workerSource = `
const { parentPort, workerData } = require("node:worker_threads");
const fs = require("node:fs");
const { O_WRONLY, O_DIRECT } = fs.constants;
const { memory, strideBytes } = workerData;
${fileWorkerPrelude}
function checkedOpen(m, flags) {
  const file = files.get(m.fileId);
  const fd = fs.openSync(file.path, flags);
  if (fs.fstatSync(fd).ino !== file.inode) {
    fs.closeSync(fd);
    throw new Error("Cannot write " + file.path + ": it is no longer the file that was opened");
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
parentPort.on("message", (m) => {
  let directBytes = 0;
  try {
    if (m.op === "close") {
      close(m.fileId);
    } else {
      if (m.path !== undefined) files.set(m.fileId, { path: m.path, inode: m.inode });
      if (!files.has(m.fileId)) throw new Error("the write worker was not told of file " + m.fileId);
      let fd = fds.get(m.fileId);
      if (fd === undefined) {
        fd = checkedOpen(m, "r+");
        fds.set(m.fileId, fd);
      }
      const bytes = new Uint8Array(memory, m.slot * strideBytes, m.length);
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
