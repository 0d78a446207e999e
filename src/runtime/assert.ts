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
