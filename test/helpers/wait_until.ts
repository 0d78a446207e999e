/**
 * Polls `check` every `pollMs` until it holds, and fails naming `what` when it has not held within
 * `deadlineMs` of real time: a test waits for the condition itself, never for a fixed time.
 */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  what: string,
  deadlineMs = 30_000,
  pollMs = 50,
): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > deadlineMs) {
      throw new Error(`Cannot wait for ${what}: not within ${deadlineMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  return Date.now() - started;
}
