/** Thrown to a waiter whose AbortSignal fired before it was admitted; the signal's reason is its `cause`. */
export class AbortedError extends Error {
  override name = "AbortedError";
  constructor(what: string, reason?: unknown) {
    super(
      `Cannot ${what}: aborted${reason instanceof Error ? ` (${reason.message})` : ""}`,
      reason === undefined ? undefined : { cause: reason },
    );
  }
}

/** Thrown when a bounded wait queue is already at its limit: callers must shed load, not queue. */
export class QueueFullError extends Error {
  override name = "QueueFullError";
  constructor(what: string, limit: number) {
    super(`Cannot ${what}: the wait queue is full (${limit} waiters)`);
  }
}
