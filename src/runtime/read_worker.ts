import { assert } from "./assert.ts";
import { directIoAlignBytes } from "./disk.ts";
import { FileWorker, fileWorkerPrelude, type WorkerFile } from "./file_worker.ts";
import type { WorkerAnswer } from "./worker_requests.ts";

/**
 * Large file reads on a thread of their own. Under Deno each `node:fs` read is a task for the
 * runtime's blocking pool, and handing it over takes the pool's lock on the event loop's thread.
 * In the pump benchmark's storm the loop was off its core in that lock 9,000 times in 21 s, 690 ms
 * in all and up to 8.6 ms at once, and a pool thread it woke took its core 1,400 times more
 * (docs/TUNING.md, item 40). The worker reads with `readSync` on its own
 * thread, through descriptors it opens by path on a file's first read and closes with the file; the
 * loop only posts a request and copies the answer out of one of a few shared slots.
 *
 * A file opened with `bypassCache` is read there around the page cache (`O_DIRECT`), each read
 * widened to aligned bounds inside the slot, whose memory starts on a page; where the file system
 * refuses, it is read buffered. It runs unchanged on Node, where it moves reads from libuv's pool.
 */
export class ReadWorker extends FileWorker<ReadAnswer> {
  constructor(options: { slotBytes: number; slotsMax: number; waitersMax: number }) {
    super({
      ...options,
      name: "read worker",
      source: workerSource,
      // Room for a direct read's widening: at most one alignment unit more than the part asked for.
      slotPaddingBytes: directIoAlignBytes,
      workerOptions: (slots) => ({
        workerData: { memory: slots.memory, strideBytes: slots.strideBytes },
        resourceLimits: {
          maxYoungGenerationSizeMb: workerYoungGenerationMb,
          maxOldGenerationSizeMb: workerOldGenerationMb,
        },
      }),
    });
  }

  /**
   * Reads up to `buffer.length` bytes (at most one slot) at `position` of the file `file.path`; the
   * count read, fewer only at the end of the file. The worker opens the file by name on its first
   * read and refuses it unless its inode is `file.inode`. `"stale"` when it cannot have the caller's
   * file that way (removed, or replaced under its name since the caller opened it): the caller then
   * reads through its own handle, which still holds the file. `"busy"` when every slot is lent and
   * the queue for them is full: the caller reads itself rather than be refused. Rejects with the
   * worker's error (its `code` kept).
   */
  async read(file: WorkerFile, buffer: Uint8Array, position: number): Promise<number | "stale" | "busy"> {
    assert(
      buffer.length <= this.slotBytes,
      `a read worker read is at most one slot (${this.slotBytes} bytes)`,
    );
    // Checked and acquired in one turn of the loop, so no other read takes the place in between.
    if (this.slots.queueFull) return "busy";
    using slot = await this.slots.acquire();
    // The name goes with a file's first read only: a string per read would be garbage in the
    // worker's heap. Requests are answered in order, so the first arrives before the ones after it.
    const known = this.openIds.has(file.id);
    this.openIds.add(file.id);
    const answer = await this.requests.send({
      op: "read",
      fileId: file.id,
      ...(known ? {} : { path: file.path, inode: file.inode }),
      slot: slot.index,
      length: buffer.length,
      position,
      direct: file.bypassCache,
    });
    // The worker remembers a stale file as such until `release`, so every read of it answers so.
    if (answer.stale) return "stale";
    buffer.set(slot.bytes.subarray(answer.skip, answer.skip + answer.bytesRead));
    if (answer.direct) this.directBytesTotal += answer.bytesRead;
    return answer.bytesRead;
  }
}

interface ReadAnswer extends WorkerAnswer {
  /** Bytes of the part read, fewer than asked only at the end of the file. */
  bytesRead: number;
  /** Where in the slot the part starts: a direct read starts on the aligned position before it. */
  skip: number;
  /** Whether the part came around the page cache. */
  direct: boolean;
  /** The worker could not open the caller's file by its name: removed, or another file there now. */
  stale: boolean;
}

/**
 * The worker's whole program, plain JavaScript so that both runtimes run it without a loader. It
 * answers every request, in order, and opens files only as the caller's (by name, with the same
 * inode). A buffered read loops until the part is read or the file ends,
 * bounded by the byte count since each pass but the last reads at least one byte. A direct read reads
 * the aligned span around the part in one pass; one the file system refuses (EINVAL: no `O_DIRECT`
 * there, or a stricter alignment) is read buffered, and so is the file from then on.
 */
const workerSource = `
const { parentPort, workerData } = require("node:worker_threads");
const fs = require("node:fs");
const { O_RDONLY, O_DIRECT } = fs.constants;
const align = ${directIoAlignBytes};
const { memory, strideBytes } = workerData;
const slots = [];
function slotBytes(index) {
  slots[index] ??= new Uint8Array(memory, index * strideBytes, strideBytes);
  return slots[index];
}
${fileWorkerPrelude}
/**
 * The file by its name if it is still the caller's; null if it was removed or replaced, and then
 * the file is stale: every read of it answers so until it is closed.
 */
function openIfSame(m, flags) {
  const file = files.get(m.fileId);
  let fd;
  try {
    fd = fs.openSync(file.path, flags);
  } catch (error) {
    if (error.code === "ENOENT") return null;
    throw error;
  }
  if (fs.fstatSync(fd).ino === file.inode) return fd;
  fs.closeSync(fd);
  return null;
}
/** A direct descriptor, or null (read buffered) where it cannot be had: it is only a faster way. */
function directFd(m) {
  if (directFds.has(m.fileId)) return directFds.get(m.fileId);
  let fd = null;
  try {
    if (O_DIRECT !== undefined) fd = openIfSame(m, O_RDONLY | O_DIRECT);
  } catch {
    fd = null;
  }
  directFds.set(m.fileId, fd);
  return fd;
}
function readDirect(m, slot) {
  const fd = directFd(m);
  if (fd === null) return null;
  const skip = m.position % align;
  const span = Math.ceil((skip + m.length) / align) * align;
  try {
    const n = fs.readSync(fd, slot, 0, span, m.position - skip);
    return { bytesRead: Math.max(0, Math.min(n - skip, m.length)), skip };
  } catch (error) {
    if (error.code !== "EINVAL") throw error;
    fs.closeSync(fd);
    directFds.set(m.fileId, null);
    return null;
  }
}
/** The count read, or null when the file cannot be opened as the caller's. */
function readBuffered(m, slot) {
  let fd = fds.get(m.fileId);
  if (fd === undefined) {
    fd = openIfSame(m, O_RDONLY);
    if (fd === null) {
      files.set(m.fileId, null);
      return null;
    }
    fds.set(m.fileId, fd);
  }
  let done = 0;
  while (done < m.length) {
    const n = fs.readSync(fd, slot, done, m.length - done, m.position + done);
    if (n <= 0) break;
    done += n;
  }
  return done;
}
function answer(m) {
  if (m.op === "close") {
    close(m.fileId);
    return { bytesRead: 0, skip: 0, direct: false, stale: false };
  }
  if (m.path !== undefined) files.set(m.fileId, { path: m.path, inode: m.inode });
  if (!files.has(m.fileId)) throw new Error("the read worker was not told of file " + m.fileId);
  if (files.get(m.fileId) === null) return { bytesRead: 0, skip: 0, direct: false, stale: true };
  const slot = slotBytes(m.slot);
  const direct = m.direct ? readDirect(m, slot) : null;
  if (direct !== null) return { bytesRead: direct.bytesRead, skip: direct.skip, direct: true, stale: false };
  const bytesRead = readBuffered(m, slot);
  return { bytesRead: bytesRead ?? 0, skip: 0, direct: false, stale: bytesRead === null };
}
parentPort.on("message", (m) => {
  try {
    parentPort.postMessage({ seq: m.seq, ...answer(m), error: null });
  } catch (error) {
    const failure = { code: error && error.code, message: String(error && error.message) };
    parentPort.postMessage({ seq: m.seq, bytesRead: 0, skip: 0, direct: false, stale: false, error: failure });
  }
});
`;

/**
 * The worker's young generation, in MB. Its garbage is a few small objects per read, and without a
 * bound its semi-spaces grow to the process's (`--max-semi-space-size`), memory the storm's RSS pays.
 */
const workerYoungGenerationMb = 1;

/**
 * The worker's old generation, in MB. What it keeps alive is about 6.5 MB (Deno's Node compatibility
 * layer, the descriptor maps); without a bound V8 let its heap reach 18 MB through one storm before a
 * full collection, 12.6 MB with this one. Past it the worker ends (ERR_WORKER_OUT_OF_MEMORY, in both
 * runtimes), the reads it owed fail, and the next read starts a new worker.
 */
const workerOldGenerationMb = 10;

let shared: ReadWorker | null = null;

/**
 * The process's one read worker: four 1 MiB slots, as many as the process lets reads be in flight
 * (`readsInFlightMax` in `node_disk.ts`); more readers wait their turn, in order.
 */
export function sharedReadWorker(): ReadWorker {
  shared ??= new ReadWorker({ slotBytes: 1024 * 1024, slotsMax: 4, waitersMax: 1024 });
  return shared;
}
