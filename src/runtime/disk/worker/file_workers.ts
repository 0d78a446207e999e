import { assert } from "../../assert.ts";
import { directIoAlignBytes } from "../disk.ts";
import { Semaphore } from "../../cooperation/semaphore.ts";
import type { ResourceLimits } from "node:worker_threads";
import type { CloseRequest, FileWorkerData, WorkerAnswer } from "./file_worker_protocol.ts";
import process from "node:process";
import { WorkerError, WorkerRequests } from "./worker_requests.ts";
import type { ReadAnswer, ReadRequest } from "./read_worker_handler.ts";
import type { WriteAnswer, WriteRequest } from "./write_worker_handler.ts";

/**
 * One slot lent to a request: its index (the worker finds it at `index × strideBytes`), its bytes,
 * and how to give it back.
 */
export interface Slot extends Disposable {
  readonly index: number;
  readonly bytes: Uint8Array;
}

/**
 * A few equal slots of one shared memory, lent in turn: what the loop and a file worker pass bytes
 * through without copying them into a message. The memory is a shared WebAssembly memory, whose
 * buffer starts on a page, and every slot starts on `directIoAlignBytes`, so a slot can be the
 * buffer of a direct (`O_DIRECT`) read or write. Turns are FIFO, with a bounded queue.
 */
export class SharedSlots {
  readonly memory: SharedArrayBuffer;
  readonly slotBytes: number;
  readonly slotsMax: number;
  readonly strideBytes: number;
  readonly name: string;
  readonly #slots: Uint8Array[];
  readonly #free: number[];
  readonly #turns: Semaphore;

  constructor(options: { slotBytes: number; slotsMax: number; waitersMax: number; name: string }) {
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
    this.name = options.name;
    this.strideBytes = Math.ceil(options.slotBytes / directIoAlignBytes) * directIoAlignBytes;
    const wasmPageBytes = 64 * 1024;
    const pages = Math.ceil((this.strideBytes * options.slotsMax) / wasmPageBytes);
    const memory: unknown = new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true }).buffer;
    assert(memory instanceof SharedArrayBuffer, "a shared WebAssembly memory's buffer is shared");
    this.memory = memory;
    this.#slots = Array.from(
      { length: options.slotsMax },
      (_, i) => new Uint8Array(memory, i * this.strideBytes, options.slotBytes),
    );
    this.#free = this.#slots.map((_, i) => i);
    this.#turns = new Semaphore({
      permits: options.slotsMax,
      waitersMax: options.waitersMax,
      name: options.name,
    });
  }

  /** Gauge: slots lent. */
  get inUse(): number {
    return this.#turns.inUse;
  }

  /** Whether a caller now would be refused (`acquire` would reject): no slot free, and no room to wait. */
  get queueFull(): boolean {
    return this.#turns.inUse >= this.slotsMax && this.#turns.waiting >= this.#turns.waitersMax;
  }

  /** Waits for a free slot, in turn; `using` gives it back at the end of the scope. */
  async acquire(): Promise<Slot> {
    const turn = await this.#turns.acquire();
    const index = this.#free.pop();
    assert(index !== undefined, `a ${this.name} is free when a turn is held`);
    let returned = false;
    return {
      index,
      bytes: this.#slots[index]!,
      [Symbol.dispose]: () => {
        assert(!returned, "Cannot give a slot back twice");
        returned = true;
        this.#free.push(index);
        turn.release();
      },
    };
  }
}

/**
 * A file as a worker knows it: an id of the caller's, its path, the inode it must be (the worker
 * opens by path and checks it), and whether its I/O goes around the page cache where it can.
 */
export interface WorkerFile {
  id: number;
  path: string;
  inode: number;
  bypassCache: boolean;
}

/** How a file worker is made: its slots, its program, and its heap's bounds. */
export interface FileWorkerOptions {
  /** The most one request moves, in bytes. */
  slotBytes: number;
  /** Slots, and so requests in flight at once. */
  slotsMax: number;
  /** Bound on callers queued for a slot. */
  waitersMax: number;
  name: string;
  /** The worker's program, a module answering requests `Q` (e.g. `read_worker_main.ts`). */
  entry: URL;
  /** Room in each slot beyond `slotBytes`, e.g. for a direct read's widening. */
  slotPaddingBytes?: number;
  /** Bounds on the worker's heap; none by default. */
  resourceLimits?: ResourceLimits;
}

/**
 * What the read and write workers share: a few shared slots lent in turn, the requests to a worker
 * thread, and the files it knows by id, each closed there by `release`. The subclass says what a
 * request `Q` is and what its answer `A` holds. The slots' memory goes to the worker once, at its
 * start, as its `workerData`, rather than with every request.
 */
export class FileWorker<Q extends object, A extends WorkerAnswer> {
  readonly slotBytes: number;
  readonly slotsMax: number;
  protected readonly slots: SharedSlots;
  protected readonly requests: WorkerRequests<A, Q | CloseRequest>;
  /** Files the worker knows and may hold a descriptor of: what `release` must close there. */
  protected readonly openIds = new Set<number>();
  protected directBytesTotal = 0;

  constructor(options: FileWorkerOptions) {
    this.slotBytes = options.slotBytes;
    this.slotsMax = options.slotsMax;
    this.slots = new SharedSlots({
      slotBytes: options.slotBytes + (options.slotPaddingBytes ?? 0),
      slotsMax: options.slotsMax,
      waitersMax: options.waitersMax,
      name: `${options.name} slot`,
    });
    const workerData: FileWorkerData = { memory: this.slots.memory, strideBytes: this.slots.strideBytes };
    this.requests = new WorkerRequests<A, Q | CloseRequest>({
      name: options.name,
      entry: options.entry,
      requestsMax: options.slotsMax,
      onReset: () => this.openIds.clear(),
      workerOptions: {
        workerData,
        ...(options.resourceLimits === undefined ? {} : { resourceLimits: options.resourceLimits }),
      },
    });
  }

  /** Starts the worker thread now (see `WorkerRequests.start`). */
  start(): void {
    this.requests.start();
  }

  /** Whether its worker thread is up. */
  get running(): boolean {
    return this.requests.running;
  }

  /** Gauge: requests handed to the worker and not yet answered. */
  get inFlight(): number {
    return this.requests.inFlight;
  }

  /** Gauge: files the worker knows and may hold open. */
  get openFiles(): number {
    return this.openIds.size;
  }

  /** Counter: bytes moved around the page cache (`bypassCache`), since the worker was made. */
  get directBytes(): number {
    return this.directBytesTotal;
  }

  /** Closes the worker's descriptors of a file, if it has any; answered before it resolves. */
  async release(fileId: number): Promise<void> {
    if (!this.openIds.delete(fileId)) return;
    // A close takes a slot like any request, so requests in flight never exceed the slots.
    using _slot = await this.slots.acquire();
    await this.requests.send({ op: "close", fileId });
  }
}

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

let sharedRead: ReadWorker | null = null;

/**
 * The process's one read worker: four 1 MiB slots, as many as the process lets reads be in flight
 * (`readsInFlightMax` in `node_disk.ts`); more readers wait their turn, in order.
 */
export function sharedReadWorker(): ReadWorker {
  sharedRead ??= new ReadWorker({ slotBytes: 1024 * 1024, slotsMax: 4, waitersMax: 1024 });
  return sharedRead;
}

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
    // The name goes with a file's first write only, as for reads (`ReadWorker`); requests are
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

let sharedWrite: WriteWorker | null = null;

/**
 * The process's one write worker, like libuv's one thread pool: four 1 MiB slots, enough for the
 * shard's upload and chunk fills writing at once; more writers wait their turn, in order.
 */
export function sharedWriteWorker(): WriteWorker {
  sharedWrite ??= new WriteWorker({ slotBytes: 1024 * 1024, slotsMax: 4, waitersMax: 1024 });
  return sharedWrite;
}
