import type { Cancel } from "./clock.ts";
import { AbortedError } from "./wait_errors.ts";

/** `sleep` built from a clock's `schedule`, shared by both clocks so abort behaves the same. */
export function sleepWith(
  schedule: (delayMs: number, callback: () => void) => Cancel,
  delayMs: number,
  signal?: AbortSignal,
): Promise<void> {
  if (signal?.aborted) return Promise.reject(new AbortedError("sleep", signal.reason));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      cancel();
      reject(new AbortedError("sleep", signal?.reason));
    };
    const cancel = schedule(delayMs, () => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    });
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
