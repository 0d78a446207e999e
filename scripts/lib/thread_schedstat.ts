import { readFileSync } from "node:fs";

/**
 * What the kernel's scheduler says about one thread: how long it ran and how long it was ready to
 * run but waited for a core. A tick that fires late while its thread waited in the run queue was
 * delayed by the machine (another process on the same cores), not by the pump's own work.
 */
export interface ThreadSchedstat {
  onCpuNs: number;
  runqueueWaitNs: number;
}

/** Linux's `/proc/.../schedstat`: "<ns on cpu> <ns waiting on a runqueue> <timeslices>". */
export function parseSchedstat(text: string): ThreadSchedstat | null {
  const fields = text.trim().split(/\s+/);
  if (fields.length !== 3) return null;
  const [onCpuNs, runqueueWaitNs] = fields.map(Number) as [number, number];
  if (!Number.isSafeInteger(onCpuNs) || !Number.isSafeInteger(runqueueWaitNs)) return null;
  if (onCpuNs < 0 || runqueueWaitNs < 0) return null;
  return { onCpuNs, runqueueWaitNs };
}

/**
 * The calling thread's account, or null where the kernel keeps none (not Linux, or scheduler
 * statistics compiled out). Read on the event loop's thread, it is the loop's.
 */
export function readThreadSchedstat(path = "/proc/thread-self/schedstat"): ThreadSchedstat | null {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return null;
  }
  return parseSchedstat(text);
}

/** Milliseconds per second of wall time the thread ran and waited between two readings. */
export function schedstatRates(
  start: ThreadSchedstat | null,
  end: ThreadSchedstat | null,
  elapsedMs: number,
): { onCpuMsPerS: number; runqueueWaitMsPerS: number } | null {
  if (start === null || end === null || elapsedMs <= 0) return null;
  const perS = (ns: number) => Number((ns / 1e6 / (elapsedMs / 1000)).toFixed(1));
  return {
    onCpuMsPerS: perS(end.onCpuNs - start.onCpuNs),
    runqueueWaitMsPerS: perS(end.runqueueWaitNs - start.runqueueWaitNs),
  };
}
