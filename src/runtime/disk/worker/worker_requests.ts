import { assert } from "../../assert.ts";
import { Worker, type WorkerOptions } from "node:worker_threads";
import type { WorkerAnswer } from "./file_worker_protocol.ts";

/** A request the worker answered with an error: the system's code (e.g. ENOSPC), and the whole answer. */
export class WorkerError<A extends WorkerAnswer = WorkerAnswer> extends Error {
  readonly code: string | undefined;
  readonly answer: A;

  constructor(message: string, code: string | undefined, answer: A) {
    super(message);
    this.name = "WorkerError";
    this.code = code;
    this.answer = answer;
  }
}

interface Pending<A> {
  resolve: (answer: A) => void;
  reject: (error: Error) => void;
}

/**
 * Requests `Q` to a worker thread and their answers `A`, matched by number: the plumbing the read
 * and write workers share. The worker runs the module `entry`, started on the first request; it is
 * held open only while it owes answers, so an idle worker never keeps the process alive. A worker
 * that dies fails what it owed, and the next request starts a new one (`onReset` lets the owner
 * forget what the old one held).
 *
 * The entry is a TypeScript module, and each runtime starts it as it runs the caller's modules:
 * Deno loads it with the caller's permissions (read access to the module is needed), and Node starts
 * a worker with the parent's `execArgv` unless told otherwise, so a process whose TypeScript comes
 * through a loader (tap's `--import` of its TypeScript hook) gives the worker the same loader.
 */
export class WorkerRequests<A extends WorkerAnswer, Q extends object = Record<string, unknown>> {
  readonly name: string;
  readonly requestsMax: number;
  readonly #entry: URL;
  readonly #workerOptions: WorkerOptions;
  readonly #onReset: () => void;
  /** Requests sent and not answered, by number; at most `requestsMax`. */
  readonly #pending = new Map<number, Pending<A>>();
  #worker: Worker | null = null;
  #nextSeq = 1;

  constructor(options: {
    name: string;
    /** The worker's program: a module, e.g. `new URL("./read_worker_main.ts", import.meta.url)`. */
    entry: URL;
    requestsMax: number;
    onReset: () => void;
    /** What the worker starts with (`workerData`, e.g. a shared memory) and its heap's bounds. */
    workerOptions?: WorkerOptions;
  }) {
    assert(
      Number.isInteger(options.requestsMax) && options.requestsMax >= 1,
      "requestsMax must be a positive integer",
    );
    this.name = options.name;
    this.requestsMax = options.requestsMax;
    // Under Node, the parent's execArgv is what carries a TypeScript loader to the worker.
    assert(
      options.workerOptions?.execArgv === undefined,
      `the ${options.name} inherits the parent's execArgv`,
    );
    this.#entry = options.entry;
    this.#workerOptions = options.workerOptions ?? {};
    this.#onReset = options.onReset;
  }

  /** Gauge: requests sent and not yet answered. */
  get inFlight(): number {
    return this.#pending.size;
  }

  /** Whether the worker thread is up (started, and not dead since). */
  get running(): boolean {
    return this.#worker !== null;
  }

  /**
   * Starts the worker thread now instead of at the first request. Making a worker holds the loop
   * for 70 to 95 ms on the benchmark VM: a server pays that at boot, before it listens, rather than
   * in the middle of the first cold read's fill. A worker that dies is started again by the next
   * request, as before.
   */
  start(): void {
    this.#started();
  }

  /**
   * Sends `message` with a number of its own and resolves with the answer, or rejects with a
   * `WorkerError` (the system's code kept, e.g. ENOSPC), or the worker's death. The caller holds a turn that bounds requests in
   * flight by `requestsMax`.
   */
  send(message: Q): Promise<A> {
    const worker = this.#started();
    assert(this.#pending.size < this.requestsMax, `${this.name} requests in flight exceed its turns`);
    const seq = this.#nextSeq++;
    return new Promise<A>((resolve, reject) => {
      this.#pending.set(seq, { resolve, reject });
      if (this.#pending.size === 1) worker.ref();
      try {
        worker.postMessage({ ...message, seq });
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
    const worker = new Worker(this.#entry, this.#workerOptions);
    worker.on("message", (answer: A) => this.#answered(answer));
    worker.on("error", (error: Error) => this.#failAll(error));
    worker.on(
      "exit",
      (code: number) => this.#failAll(new Error(`the ${this.name} exited with code ${code}`)),
    );
    worker.unref();
    this.#worker = worker;
    return worker;
  }

  #answered(answer: A): void {
    const pending = this.#pending.get(answer.seq);
    assert(pending !== undefined, `the ${this.name} answered request ${answer.seq}, which is not pending`);
    this.#pending.delete(answer.seq);
    if (this.#pending.size === 0) this.#worker?.unref();
    if (answer.error === null) pending.resolve(answer);
    else pending.reject(new WorkerError(answer.error.message, answer.error.code, answer));
  }

  #failAll(error: Error): void {
    this.#worker = null;
    this.#onReset();
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }
}
