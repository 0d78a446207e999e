import type { WorkerOptions } from "node:worker_threads";
import { SharedSlots } from "./shared_slots.ts";
import { type WorkerAnswer, WorkerRequests } from "./worker_requests.ts";

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

/** How a file worker is made: its slots, its program, and what the worker starts with. */
export interface FileWorkerOptions {
  /** The most one request moves, in bytes. */
  slotBytes: number;
  /** Slots, and so requests in flight at once. */
  slotsMax: number;
  /** Bound on callers queued for a slot. */
  waitersMax: number;
  name: string;
  source: string;
  /** Room in each slot beyond `slotBytes`, e.g. for a direct read's widening. */
  slotPaddingBytes?: number;
  /** What the worker starts with, given its slots (e.g. their memory as `workerData`), and its heap's bounds. */
  workerOptions?: (slots: SharedSlots) => WorkerOptions;
}

/**
 * What the read and write workers share: a few shared slots lent in turn, the requests to a worker
 * thread, and the files it knows by id, each closed there by `release`. The subclass says what a
 * request is.
 */
export class FileWorker<A extends WorkerAnswer> {
  readonly slotBytes: number;
  readonly slotsMax: number;
  protected readonly slots: SharedSlots;
  protected readonly requests: WorkerRequests<A>;
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
    this.requests = new WorkerRequests<A>({
      name: options.name,
      source: options.source,
      requestsMax: options.slotsMax,
      onReset: () => this.openIds.clear(),
      workerOptions: options.workerOptions?.(this.slots),
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

/**
 * The part of both workers' programs that keeps their files: each file's name and inode as the
 * caller sent them (the read worker marks a stale one null), its buffered and direct descriptors,
 * and `close`, which forgets all three. It expects `fs` (`node:fs`) in scope.
 */
export const fileWorkerPrelude = `
const files = new Map();
const fds = new Map();
const directFds = new Map();
function close(fileId) {
  files.delete(fileId);
  for (const map of [fds, directFds]) {
    const fd = map.get(fileId);
    map.delete(fileId);
    if (fd !== undefined && fd !== null) fs.closeSync(fd);
  }
}`;
