import { QueueFullError } from "../wait_errors.ts";

/**
 * Tasks run one at a time, each once every task queued before it has finished (whatever its
 * outcome), at most `queuedMax` waiting or running: one more is refused with `QueueFullError`.
 * What one task changes is seen by the next, so a queue of appends applies them in their order.
 */
export class SerialQueue {
  readonly #label: string;
  readonly #queuedMax: number;
  #chain: Promise<unknown> = Promise.resolve();
  #queued = 0;

  constructor(label: string, queuedMax: number) {
    if (!Number.isInteger(queuedMax) || queuedMax < 1) {
      throw new RangeError(`Cannot make the queue of ${label}: queuedMax must be a positive integer`);
    }
    this.#label = label;
    this.#queuedMax = queuedMax;
  }

  /** Gauge: tasks waiting or running. */
  get queued(): number {
    return this.#queued;
  }

  /** Runs `task` in its turn; resolves or rejects as it does. */
  enqueue<T>(task: () => Promise<T>): Promise<T> {
    if (this.#queued >= this.#queuedMax) {
      return Promise.reject(new QueueFullError(`queue a task on ${this.#label}`, this.#queuedMax));
    }
    this.#queued += 1;
    const run = this.#chain.then(task).finally(() => {
      this.#queued -= 1;
    });
    // The chain goes on after a failed task: that task's caller heard of its failure.
    this.#chain = run.catch(() => {});
    return run;
  }

  /** Resolves once every task queued so far has finished. */
  async settled(): Promise<void> {
    await this.#chain;
  }
}
