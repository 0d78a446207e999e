import process from "node:process";
import type { ResourceLimits } from "node:worker_threads";
import { assert } from "./assert.ts";
import { directIoAlignBytes } from "./disk.ts";
import { FileWorker, type WorkerFile } from "./file_worker.ts";
import type { ReadAnswer, ReadRequest } from "./read_worker_handler.ts";

/**
 * Large file reads on a thread of their own. Under Deno each `node:fs` read is a task for the
 * runtime's blocking pool, and handing it over takes the pool's lock on the event loop's thread.
 * In the pump benchmark's storm the loop was off its core in that lock 9,000 times in 21 s, 690 ms
 * in all and up to 8.6 ms at once, and a pool thread it woke took its core 1,400 times more
 * (docs/TUNING.md, "The read worker"). The worker reads with `readSync` on its own thread, through
 * descriptors it opens by path on a file's first read and closes with the file; the loop only posts
 * a request and copies the answer out of one of a few shared slots.
 *
 * A file opened with `bypassCache` is read there around the page cache (`O_DIRECT`), each read
 * widened to aligned bounds inside the slot, whose memory starts on a page; where the file system
 * refuses, it is read buffered. It runs unchanged on Node, where it moves reads from libuv's pool.
 * The worker's program is `ReadHandler` (`read_worker_handler.ts`), started by `read_worker_main.ts`.
 */
export class ReadWorker extends FileWorker<ReadRequest, ReadAnswer> {
  constructor(options: { slotBytes: number; slotsMax: number; waitersMax: number }) {
    super({
      ...options,
      name: "read worker",
      entry: new URL("./read_worker_main.ts", import.meta.url),
      // Room for a direct read's widening: at most one alignment unit more than the part asked for.
      slotPaddingBytes: directIoAlignBytes,
      resourceLimits: readWorkerHeapLimits(process.execArgv),
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

/**
 * The worker's heap bounds, given the process's `execArgv`, which a worker thread inherits. They are
 * sized for the worker's own program. A process that preloads modules into every thread (`--import`,
 * `--require` or `--loader`) puts them in the worker too, beyond any bound sized for the program:
 * tap's TypeScript loader under Node keeps about 50 MB there. Such a worker goes without bounds.
 * Deno preloads nothing, so the server's worker always has them.
 */
export function readWorkerHeapLimits(execArgv: readonly string[]): ResourceLimits | undefined {
  const preloads = execArgv.some((arg) =>
    /^(-r|--require|--import|--loader|--experimental-loader)(=|$)/.test(arg)
  );
  if (preloads) return undefined;
  return { maxYoungGenerationSizeMb: workerYoungGenerationMb, maxOldGenerationSizeMb: workerOldGenerationMb };
}

let shared: ReadWorker | null = null;

/**
 * The process's one read worker: four 1 MiB slots, as many as the process lets reads be in flight
 * (`readsInFlightMax` in `node_disk.ts`); more readers wait their turn, in order.
 */
export function sharedReadWorker(): ReadWorker {
  shared ??= new ReadWorker({ slotBytes: 1024 * 1024, slotsMax: 4, waitersMax: 1024 });
  return shared;
}
