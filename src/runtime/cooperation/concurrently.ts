import { assert } from "../assert.ts";

/**
 * Runs `step(0) … step(count - 1)` with at most `concurrencyMax` of them in flight, and resolves
 * with their results in index order. After a step fails no further step starts; the ones in flight
 * are waited for, then the first failure is thrown, so a caller that cleans up sees every step that
 * ran to its end.
 */
export async function concurrently<R>(
  count: number,
  concurrencyMax: number,
  step: (index: number) => Promise<R>,
): Promise<R[]> {
  assert(Number.isInteger(count) && count >= 0, `Cannot run ${count} steps`);
  assert(Number.isInteger(concurrencyMax) && concurrencyMax >= 1, "Cannot run steps with no concurrency");
  const results = new Array<R>(count);
  let next = 0;
  let failure: { error: unknown } | null = null;
  const worker = async () => {
    while (failure === null && next < count) {
      const index = next++;
      try {
        results[index] = await step(index);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrencyMax, count) }, worker));
  if (failure !== null) throw (failure as { error: unknown }).error;
  return results;
}
