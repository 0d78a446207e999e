import type { ErrorClass } from "./object_store_errors.ts";

/** Backoff of one profile: `initialMs × factor^(n-1)`, capped at `maxMs`. */
export interface BackoffProfile {
  initialMs: number;
  factor: number;
  maxMs: number;
}

/**
 * The two retry profiles (docs/DESIGN.md, "Retry profiles"): transient errors retry at once,
 * then back off from 10 ms by ×2 to 5 s; non-transient errors (a checksum mismatch, an unexpected
 * 4xx) back off from 1 s to 30 s. Both use equal jitter.
 */
export interface RetryProfiles {
  transient: BackoffProfile;
  nonTransient: BackoffProfile;
}

export const defaultRetryProfiles: RetryProfiles = {
  transient: { initialMs: 10, factor: 2, maxMs: 5000 },
  nonTransient: { initialMs: 1000, factor: 2, maxMs: 30_000 },
};

/** What to do after failed attempt number `attempt` (1-based). */
export type RetryDecision = { retry: true; delayMs: number } | { retry: false; reason: string };

/**
 * Pure: the delay before the next attempt, or why there is none. `random` is a uniform draw in
 * [0, 1) from the injected Rng, so the decision is reproducible. Not-found, auth and unsupported
 * errors are answers, not failures: they are never retried, and neither is a failed precondition.
 * A retry is allowed only if it can start before the deadline.
 */
export function decideRetry(
  errorClass: ErrorClass,
  preconditionFailed: boolean,
  attempt: number,
  nowMs: number,
  deadlineAtMs: number,
  profiles: RetryProfiles,
  random: number,
): RetryDecision {
  if (
    errorClass === "not_found" || errorClass === "not_modified" || errorClass === "auth" ||
    errorClass === "unsupported" || preconditionFailed
  ) {
    return { retry: false, reason: `a ${errorClass} error is not retried` };
  }
  const delayMs = errorClass === "retry"
    ? transientDelayMs(attempt, profiles.transient, random)
    : jittered(backoffMs(attempt, profiles.nonTransient), random);
  if (nowMs + delayMs >= deadlineAtMs) {
    return { retry: false, reason: "the deadline leaves no time for another attempt" };
  }
  return { retry: true, delayMs };
}

/** The first transient retry is immediate; later ones back off. */
function transientDelayMs(attempt: number, profile: BackoffProfile, random: number): number {
  return attempt <= 1 ? 0 : jittered(backoffMs(attempt - 1, profile), random);
}

export function backoffMs(n: number, profile: BackoffProfile): number {
  return Math.min(profile.maxMs, profile.initialMs * profile.factor ** Math.max(0, n - 1));
}

/** Equal jitter: uniform in [delay/2, delay]. */
export function jittered(delayMs: number, random: number): number {
  return delayMs / 2 + random * (delayMs / 2);
}
