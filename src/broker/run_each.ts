/**
 * Shutdown steps that must reach every resource whatever happens to the others: a shard whose
 * housekeeping fails to stop still closes its control log, and every other partition is still
 * synced when one fails to close.
 */

/** Runs `step` on each item in turn, whether or not an earlier one failed; resolves with the failures. */
export async function runEach<T>(items: Iterable<T>, step: (item: T) => Promise<void>): Promise<unknown[]> {
  const failures: unknown[] = [];
  for (const item of items) {
    try {
      await step(item);
    } catch (error) {
      failures.push(error);
    }
  }
  return failures;
}

/** Returns when nothing failed; throws the failure when one did, and an AggregateError of all when more did. */
export function throwFailures(what: string, failures: readonly unknown[]): void {
  if (failures.length === 0) return;
  if (failures.length === 1) throw failures[0];
  throw new AggregateError(failures, `Cannot ${what}: ${failures.length} steps failed`);
}
