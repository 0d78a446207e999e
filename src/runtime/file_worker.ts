import type { ResourceLimits } from "node:worker_threads";
import type { CloseRequest, FileWorkerData, WorkerAnswer } from "./file_worker_protocol.ts";
import { SharedSlots } from "./shared_slots.ts";
import { WorkerRequests } from "./worker_requests.ts";

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
