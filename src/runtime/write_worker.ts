import { directIoAlignBytes } from "./disk.ts";
import { FileWorker, type WorkerFile } from "./file_worker.ts";
import { WorkerError } from "./worker_requests.ts";
import type { WriteAnswer, WriteRequest } from "./write_worker_handler.ts";

/**
 * Large file writes on a thread of their own. Under Deno, `node:fs` writes run on the event loop's
 * thread, and the kernel's copy of the bytes into the page cache is then the loop's work: in the
 * pump benchmark's upload phase 75 % of the loop's time, about 3.3 ms per MB of fresh memory on the
 * test VM (docs/TUNING.md, "The write worker" and "Writes into fresh memory"). The worker writes
 * through file descriptors of its own, opened by path on a file's first large write and closed with
 * the file; the loop only copies each piece into one of a few shared slots (a memcpy into memory it
 * already holds) and waits for the answer. It runs unchanged on Node, where it only moves the write
 * from libuv's pool to this thread.
 *
 * A file opened with `bypassCache` gets a second descriptor there, opened with `O_DIRECT`, for its
 * aligned writes: the device then reads the slot itself, and nothing is copied into the page cache
 * (where that copy goes into fresh memory, as on the test VM, it is the upload's limit;
 * docs/TUNING.md, "Direct I/O"). Direct writes need aligned memory as well, so the slots are carved
 * from one shared WebAssembly memory, whose buffer starts on a page. Where the file system refuses
 * `O_DIRECT`, writes are buffered, through the first descriptor. The worker's program is
 * `WriteHandler` (`write_worker_handler.ts`), started by `write_worker_main.ts`.
 */
export class WriteWorker extends FileWorker<WriteRequest, WriteAnswer> {
  constructor(options: { slotBytes: number; slotsMax: number; waitersMax: number }) {
    super({ ...options, name: "write worker", entry: new URL("./write_worker_main.ts", import.meta.url) });
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
