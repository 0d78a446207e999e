import type { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
/**
 * How a wait moves between two checks of its condition, and on which clock its deadline runs.
 *
 * - `realTime(pollMs)`: sleeps `pollMs` of real time; the deadline is in real time.
 * - `virtualSteps(clock, stepMs)`: lets pending promises and I/O callbacks run (a real sleep of
 *   `settleMs`, 0 for a few turns of the loop only), then moves the virtual clock `stepMs`; the
 *   deadline is in real time, since the code under test may do real I/O between steps.
 * - `virtualTime(clock, stepMs)`: the same steps, with the deadline in virtual time, for code that
 *   does no real I/O (a run is then the same on every machine).
 */
export interface WaitPace {
  /** The clock the deadline is measured on, in milliseconds. */
  nowMs(): number;
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

export function realTime(pollMs = 20): WaitPace {
  return { clock: "real", nowMs: () => performance.now(), step: () => realSleep(pollMs) };
}

export function virtualSteps(clock: VirtualClock, stepMs: number, settleMs = 1): WaitPace {
  return {
    clock: "real",
    nowMs: () => performance.now(),
    step: async () => {
      await realSleep(settleMs);
      clock.advance(stepMs);
    },
  };
}

export function virtualTime(clock: VirtualClock, stepMs: number): WaitPace {
  return {
    clock: "virtual",
    nowMs: () => clock.nowMs(),
    step: async () => {
      await loopTurns(turnsPerSettle);
      clock.advance(stepMs);
    },
  };
}

export interface WaitOptions {
  /** How long the condition may take, on the pace's clock. */
  deadlineMs: number;
  /** Real-time polling every 20 ms when not given. */
  pace?: WaitPace;
}

/**
 * The one way tests and scripts wait for a condition: checks `condition` until it holds, stepping
 * by `pace` between two checks, and throws naming `what` once `deadlineMs` has passed on the pace's
 * clock. Returns the milliseconds the wait took on that clock. A condition that throws ends the wait
 * with its error. No test sleeps for a fixed time instead of waiting for what it needs.
 */
export async function waitFor(
  what: string,
  condition: () => boolean | Promise<boolean>,
  options: WaitOptions,
): Promise<number> {
  const pace = options.pace ?? realTime();
  const startedMs = pace.nowMs();
  for (;;) {
    if (await condition()) return pace.nowMs() - startedMs;
    if (pace.nowMs() - startedMs > options.deadlineMs) {
      throw new Error(`Cannot wait for ${what}: not within ${options.deadlineMs} ${pace.clock} ms`);
    }
    await pace.step();
  }
}
