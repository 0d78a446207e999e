import type { Logger } from "./logger.ts";

/**
 * The project's assertion. It stays on in production: an invariant that does not hold means the
 * process is about to do something wrong with data, and stopping is better than continuing.
 */
export class AssertionError extends Error {
  override name = "AssertionError";
}

export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new AssertionError(`Assertion failed: ${message}`);
}

/** Marks a branch the type checker proves unreachable; reaching it at run time is a bug. */
export function unreachable(value: never, message: string): never {
  throw new AssertionError(`Unreachable: ${message}: ${String(value)}`);
}

/**
 * Whether `error` is a bug rather than an expected failure: a broken assertion, or a programming
 * error the JavaScript runtime raised in our own code (a `TypeError`, `RangeError` or
 * `ReferenceError`). Expected failures (disk, object store, network, coordinator, bad input) reach
 * their handlers as typed errors: the shells wrap what the runtime reports of the outside world (a
 * refused connection's `TypeError` from `fetch`, a malformed JSON's `SyntaxError`) before it gets
 * there, so a handler that asks may trust the answer.
 */
export function isBug(error: unknown): error is Error {
  return error instanceof AssertionError || error instanceof TypeError || error instanceof RangeError ||
    error instanceof ReferenceError;
}

/**
 * What every handler of expected failures does first: when `error` is a bug, it is logged loudly as
 * `bug: <what>` with its stack, its causes and `fields`, and thrown again, so that no retry, fallback
 * or "try again later" goes on past it. Thrown out of a background duty it ends the process (the
 * entry point logs the unhandled rejection and the runtime exits); out of a request, the request.
 * An expected failure returns, for the caller's own typed handling.
 */
export function rethrowBug(
  error: unknown,
  logger: Logger,
  what: string,
  fields: Record<string, unknown> = {},
): void {
  if (!isBug(error)) return;
  logger.error(`bug: ${what}`, { ...fields, error });
  throw error;
}
