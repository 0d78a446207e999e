import { assert } from "../assert.ts";

/**
 * The system's scheduling of the calling thread, injected so that the decision and its reporting
 * are tested without changing the test process's own priority.
 */
export interface ThreadControl {
  /** The calling thread's nice value. */
  ownNice(): number;
  /** Sets the calling thread's nice value alone. Throws what the system refuses. */
  setOwnNice(nice: number): void;
}

/** The nice values Linux accepts. */
export const niceMin = -20;
export const niceMax = 19;

/** What `setLoopThreadNice` did. */
export type LoopNiceOutcome =
  | { readonly kind: "unchanged" }
  | { readonly kind: "set"; readonly nice: number; readonly wasNice: number }
  | { readonly kind: "refused"; readonly nice: number; readonly keptNice: number; readonly reason: string };

/**
 * Gives the calling thread, the event loop's, the configured nice value (0 asks for no change).
 * Threads the loop starts afterwards inherit it (Deno's disk threads among them), those started
 * before keep theirs: the engine's helper threads, which mark and sweep for the collector, and the
 * write worker. A refusal is not fatal: a negative value needs CAP_SYS_NICE or an RLIMIT_NICE
 * allowance, and without either the thread keeps its priority and the server runs on; the caller
 * reports it.
 */
export function setLoopThreadNice(control: ThreadControl, nice: number): LoopNiceOutcome {
  assert(
    Number.isInteger(nice) && nice >= niceMin && nice <= niceMax,
    `Cannot set the loop thread's nice value: ${nice} is not an integer from ${niceMin} to ${niceMax}`,
  );
  if (nice === 0) return { kind: "unchanged" };
  const wasNice = control.ownNice();
  try {
    control.setOwnNice(nice);
  } catch (error) {
    return { kind: "refused", nice, keptNice: control.ownNice(), reason: refusalReason(error) };
  }
  return { kind: "set", nice, wasNice };
}

function refusalReason(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === "EACCES" || code === "EPERM") {
    return `${code}: the process may not raise a thread's priority (it needs CAP_SYS_NICE or RLIMIT_NICE)`;
  }
  if (typeof code === "string") return code;
  return error instanceof Error ? error.message : String(error);
}
