/**
 * What the loop and a file worker (a `ReadWorker` or `WriteWorker`, `file_workers.ts`) say to each
 * other. A request names a file by the caller's id; the file's name and inode come with its first
 * request only, since a string per request would be garbage in the worker's heap. Requests are answered in order, one
 * answer each, matched by `seq`; bytes never travel in a message, only through the shared slots.
 */

/** What a file worker starts with: the slots' shared memory, and how far apart the slots start. */
export interface FileWorkerData {
  memory: SharedArrayBuffer;
  strideBytes: number;
}

/** A request about one file: the caller's id of it, and its name and inode if this is the first. */
export interface FileRequest {
  fileId: number;
  path?: string;
  inode?: number;
}

/** A transfer of `length` bytes at `position` of a file through slot `slot`; around the page cache if `direct`. */
export interface SlotRequest extends FileRequest {
  slot: number;
  length: number;
  position: number;
  direct: boolean;
}

/** Closes the worker's descriptors of a file, and forgets it. */
export interface CloseRequest extends FileRequest {
  op: "close";
}

/** A request as the worker receives it: numbered by `WorkerRequests`, which matches its answer by the number. */
export type Numbered<Q> = Q & { seq: number };

/** A request the worker failed: the system's code (e.g. ENOSPC, EISDIR) where there is one, and the message. */
export interface WorkerFailure {
  code: string | undefined;
  message: string;
}

/** What every answer of a file worker carries: the request's number, and its failure if it failed. */
export interface WorkerAnswer {
  seq: number;
  error: WorkerFailure | null;
}

/** The system's code of a thrown error (`node:fs` errors carry one, e.g. ENOENT), if it has one. */
export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === "string" ? code : undefined;
}

/** A thrown error as it can cross to the loop: a message may carry only plain data. */
export function failureOf(error: unknown): WorkerFailure {
  return {
    code: errorCode(error),
    message: String((error as { message?: unknown } | null | undefined)?.message),
  };
}

/** The slots as the worker sees them: each a view of the shared memory over its whole stride, made once. */
export class SlotViews {
  readonly #memory: SharedArrayBuffer;
  readonly #strideBytes: number;
  readonly #views: Uint8Array[] = [];

  constructor(data: FileWorkerData) {
    this.#memory = data.memory;
    this.#strideBytes = data.strideBytes;
  }

  /** Slot `index`, from its start (on the alignment) to the next slot's. */
  slot(index: number): Uint8Array {
    let view = this.#views[index];
    if (view === undefined) {
      view = new Uint8Array(this.#memory, index * this.#strideBytes, this.#strideBytes);
      this.#views[index] = view;
    }
    return view;
  }
}
