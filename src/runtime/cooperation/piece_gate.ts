import { setImmediate } from "node:timers";
import { Semaphore } from "./semaphore.ts";

/**
 * Returns control to the event loop so that due timers and I/O callbacks run before the caller
 * resumes. A resolved promise is not enough: it is a microtask, and microtasks run before the
 * loop looks at timers, so a loop that only awaited resolved promises would starve the
 * consensus tick.
 *
 * One `setImmediate` is not enough either: called from the poll phase, it resumes in the check
 * phase of the same turn, which comes before the next timers phase. Two chained immediates always
 * span a timers phase: the second is queued from a check phase, so it runs in the next turn, after
 * that turn's timers. The cost is a few microseconds, against a piece of about a millisecond.
 */
export function yieldToReactor(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

/**
 * One piece of work at a time per process (the server makes one gate; its shards share it, as they
 * share one loop), a timers phase between two pieces. A yield after each piece bounds how long one
 * task runs, but every task that is ready runs its next piece in the same turn of the event loop,
 * and the tick waits behind the sum. Tasks that do pieces (hashing an
 * upload's piece, checking a downloaded one) take a turn first: the turn's holder runs its piece
 * at once, synchronously, and the turn passes on only after a yield to the reactor, so the tick
 * waits behind one piece at most, whatever the number of tasks.
 */
export class PieceGate {
  readonly #turns: Semaphore;
  readonly #waitersMax: number;

  constructor(waitersMax = 4096) {
    this.#turns = new Semaphore({ permits: 1, waitersMax, name: "piece gate" });
    this.#waitersMax = waitersMax;
  }

  /**
   * Resolves when it is the caller's turn; the caller then runs one piece without awaiting. Never
   * fails: the gate's callers include disk operations that have already happened, which must not
   * be reported as failed. Beyond `waitersMax` queued turns a caller does not queue but only yields,
   * so the queue stays bounded and an overload costs the tick's protection, not an error.
   */
  async turn(): Promise<void> {
    if (this.#turns.waiting >= this.#waitersMax) return await yieldToReactor();
    const permit = await this.#turns.acquire();
    void yieldToReactor().then(() => permit.release());
  }

  /** Gauge: tasks waiting for a turn. */
  get waiting(): number {
    return this.#turns.waiting;
  }
}
