/**
 * Waits for `promise`, the signal of a condition the code under test reports (a pass that ended, a
 * callback that ran), and fails with a message naming `what` when it has not settled within
 * `deadlineMs` of real time: a regression then fails the test with that message instead of hanging
 * until tap's timeout.
 */
export async function settlesWithin<T>(promise: Promise<T>, what: string, deadlineMs = 10_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`Cannot wait for ${what}: not settled within ${deadlineMs} ms`)),
      deadlineMs,
    );
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
