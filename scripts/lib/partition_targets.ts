/** The figures of a partition-count benchmark run that its targets are judged on. */
export interface PartitionFigures {
  idleCpuPercentOfCore: number;
  idleTickP99Ms: number;
  idleTickMaxMs: number;
  baselineTickP99Ms: number;
  baselineTickMaxMs: number;
  createTopicTickMaxMs: number;
  bootAfterKillMs: number;
  openFds: number;
  /** The server's `max_open_files` setting when the run set it; null leaves the fd target unjudged. */
  maxOpenFiles: number | null;
}

/** One target: what it says, its limit, what the run measured and whether it was met (null: unjudged). */
export interface TargetResult {
  name: string;
  limit: number | null;
  measured: number;
  pass: boolean | null;
}

/** The limits of the targets; the descriptor allowance covers what is not a partition's file. */
export const partitionTargetLimits = {
  idleCpuPercentOfCore: 2,
  tickOverBaselineMs: 1,
  createTopicTickMaxMs: 10,
  bootAfterKillMs: 5000,
  /** Descriptors beyond `max_open_files`: the runtime's own, sockets, the data directory's locks. */
  fdAllowance: 128,
} as const;

/** Each target judged against the run's figures, in the order docs/BENCHMARKS.md lists them. */
export function judgePartitionTargets(f: PartitionFigures): TargetResult[] {
  const l = partitionTargetLimits;
  const atMost = (name: string, measured: number, limit: number): TargetResult => ({
    name,
    limit,
    measured,
    pass: measured <= limit,
  });
  const fdLimit = f.maxOpenFiles === null ? null : f.maxOpenFiles + l.fdAllowance;
  return [
    atMost("idle CPU % of one core", f.idleCpuPercentOfCore, l.idleCpuPercentOfCore),
    atMost("idle tick p99 ms", f.idleTickP99Ms, f.baselineTickP99Ms + l.tickOverBaselineMs),
    atMost("idle tick max ms", f.idleTickMaxMs, f.baselineTickMaxMs + l.tickOverBaselineMs),
    atMost(
      "tick max ms while a 1,024-partition topic is created",
      f.createTopicTickMaxMs,
      l.createTopicTickMaxMs,
    ),
    atMost("boot after SIGKILL ms", f.bootAfterKillMs, l.bootAfterKillMs),
    fdLimit === null
      ? { name: "open descriptors", limit: null, measured: f.openFds, pass: null }
      : atMost("open descriptors", f.openFds, fdLimit),
  ];
}

/** The targets a run missed (an unjudged one is not missed). */
export function missedTargets(results: readonly TargetResult[]): TargetResult[] {
  return results.filter((r) => r.pass === false);
}
