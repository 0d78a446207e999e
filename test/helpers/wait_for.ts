import type { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import type { InFlightDisk } from "./disks/in_flight_disk.ts";

// Every way a test or a script waits lives here: `waitFor` checks a condition until it holds or a
// deadline passes, stepping by a pace; `passTime` lets a stretch of a pace's clock go by, for a test
// about what happens (or does not) meanwhile; `settlesWithin` waits for a promise with a deadline.

/**
 * How a wait moves between two checks of its condition, and on which clock its deadline runs.
 *
 * - `realTime(pollMs, wake)`: sleeps `pollMs` of real time, or less when `wake` resolves first; the
 *   deadline is in real time.
 * - `virtualSteps(clock, stepMs, settleMs)`: moves the virtual clock `stepMs`, then lets the work it
 *   set off run (a real sleep of `settleMs`, 0 for a few turns of the loop only); the deadline is in
 *   real time, since the code under test may do real I/O between steps.
 * - `virtualTime(clock, stepMs, options)`: the same steps, with the deadline in virtual time; for code
 *   that does no real I/O (a run is then the same on every machine), or whose disk I/O the options'
 *   `quietDisk` holds the clock still for.
 *
 * A virtual pace also lets pending work run once as a wait begins, before its first check. A pace
 * serves one wait at a time.
 */
export interface WaitPace {
  /** The clock the deadline is measured on, in milliseconds. */
  nowMs(): number;
  /** What happens once as a wait begins, before its first check. */
  start?(): Promise<void>;
  /** What happens between two checks. */
  step(): Promise<void>;
  /** "real" or "virtual", for the message of a missed deadline. */
  readonly clock: "real" | "virtual";
}

const turnsPerSettle = 5;

async function loopTurns(turns: number): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

function realSleep(ms: number): Promise<void> {
  return ms <= 0 ? loopTurns(turnsPerSettle) : new Promise((resolve) => setTimeout(resolve, ms));
}

/** Sleeps `ms` of real time, or until `wake` resolves if it does first. */
async function sleepOrWake(ms: number, wake: () => Promise<void>): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([wake(), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Checks every `pollMs` of real time (0: every few turns of the loop). `wake`, when given, is asked
 * for a promise at each step that resolves when the condition may have changed (a frame arrived, a
 * socket closed): the next check comes then, without waiting out the poll.
 */
export function realTime(pollMs = 20, wake?: () => Promise<void>): WaitPace {
  return {
    clock: "real",
    nowMs: () => performance.now(),
    step: () => wake === undefined || pollMs <= 0 ? realSleep(pollMs) : sleepOrWake(pollMs, wake),
  };
}

export interface VirtualTimeOptions {
  /** Real time to let the work a step set off run before the next check; 0 (the default): a few turns of the loop. */
  settleMs?: number;
  /** Runs right after each move of the clock, with the new time: a harness ticking its services by hand. */
  onStep?: (nowMs: number) => void;
  /**
   * A disk whose operations in flight hold the clock still: after each step the pace waits for it to
   * go quiet, so a slow disk slows the wait instead of letting virtual deadlines and intervals expire
   * under work that has not had its real time yet.
   */
  quietDisk?: InFlightDisk;
  /** Bound on the real time one wait spends waiting for `quietDisk`, all steps together (120 s when not given). */
  ioWaitMaxMs?: number;
}

function virtualPace(
  clock: VirtualClock,
  stepMs: number,
  deadlineClock: "real" | "virtual",
  options: VirtualTimeOptions,
): WaitPace {
  const settleMs = options.settleMs ?? 0;
  const ioWaitMaxMs = options.ioWaitMaxMs ?? 120_000;
  let ioDeadlineAtMs = Date.now() + ioWaitMaxMs;
  return {
    clock: deadlineClock,
    nowMs: deadlineClock === "real" ? () => performance.now() : () => clock.nowMs(),
    start: async () => {
      ioDeadlineAtMs = Date.now() + ioWaitMaxMs;
      await realSleep(settleMs);
    },
    step: async () => {
      clock.advance(stepMs);
      options.onStep?.(clock.nowMs());
      await realSleep(settleMs);
      await options.quietDisk?.quiet(ioDeadlineAtMs);
    },
  };
}

export function virtualSteps(clock: VirtualClock, stepMs: number, settleMs = 1): WaitPace {
  return virtualPace(clock, stepMs, "real", { settleMs });
}

export function virtualTime(clock: VirtualClock, stepMs: number, options: VirtualTimeOptions = {}): WaitPace {
  return virtualPace(clock, stepMs, "virtual", options);
}

export interface WaitOptions {
  /** How long the condition may take, on the pace's clock. */
  deadlineMs: number;
  /** Real-time polling every 20 ms when not given. */
  pace?: WaitPace;
  /**
   * A condition that throws counts as not holding yet (a server still starting refuses a request),
   * and the last error it threw is the cause of a missed deadline. Without it, a throw ends the wait
   * with its error.
   */
  throwMeansNotYet?: boolean;
}

/** The error of a wait whose deadline passed: a caller for whom that is a finding, not a failure, catches this one. */
export class MissedDeadlineError extends Error {
  override name = "MissedDeadlineError";
}

/**
 * The one way tests and scripts wait for a condition: checks `condition` until it holds, stepping
 * by `pace` between two checks, and throws a MissedDeadlineError naming `what` once `deadlineMs` has
 * passed on the pace's clock. Returns the milliseconds the wait took on that clock. No test sleeps
 * for a fixed time instead of waiting for what it needs.
 */
export async function waitFor(
  what: string,
  condition: () => boolean | Promise<boolean>,
  options: WaitOptions,
): Promise<number> {
  const pace = options.pace ?? realTime();
  const startedMs = pace.nowMs();
  const last: { thrown: boolean; error?: unknown } = { thrown: false };
  const holds = async () => {
    if (options.throwMeansNotYet !== true) return await condition();
    try {
      return await condition();
    } catch (error) {
      last.thrown = true;
      last.error = error;
      return false;
    }
  };
  await pace.start?.();
  for (;;) {
    if (await holds()) return pace.nowMs() - startedMs;
    if (pace.nowMs() - startedMs > options.deadlineMs) {
      throw new MissedDeadlineError(
        `Cannot wait for ${what}: not within ${options.deadlineMs} ${pace.clock} ms`,
        last.thrown ? { cause: last.error } : undefined,
      );
    }
    await pace.step();
  }
}

/**
 * Lets `ms` pass on the pace's clock, stepping as a wait does: for a test about what happens, or
 * does not, over a stretch of time (no upload from a follower in 10 s, nothing swept within the
 * grace), never in place of a condition.
 */
export async function passTime(ms: number, pace: WaitPace): Promise<void> {
  const startedMs = pace.nowMs();
  await waitFor(`${ms} ${pace.clock} ms to pass`, () => pace.nowMs() - startedMs >= ms, {
    deadlineMs: ms,
    pace,
  });
}

/**
 * Waits for `promise`, the signal of a condition the code under test reports (a pass that ended, a
 * callback that ran), and fails with a MissedDeadlineError naming `what` when it has not settled
 * within `deadlineMs` of real time: a regression then fails the test with that message instead of
 * hanging until tap's timeout.
 */
export async function settlesWithin<T>(promise: Promise<T>, what: string, deadlineMs = 10_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new MissedDeadlineError(`Cannot wait for ${what}: not settled within ${deadlineMs} ms`)),
      deadlineMs,
    );
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
