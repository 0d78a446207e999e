/** The integer argument `--name` of a benchmark, from `min` to `max`; anything else is an error naming it. */
export function benchIntArg(name: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new Error(
      `Cannot run the benchmark: --${name} must be an integer from ${min} to ${max}, got ${text}`,
    );
  }
  return n;
}
