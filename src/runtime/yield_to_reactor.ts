import { setImmediate } from "node:timers";

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
