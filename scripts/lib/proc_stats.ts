import { readdirSync, readFileSync } from "node:fs";

/**
 * Linux's clock ticks per second in `/proc/PID/stat` (`USER_HZ`), fixed at 100 by the kernel's ABI on
 * every architecture it supports for user space.
 */
export const userHz = 100;

/** A process's CPU time so far: user plus system, in milliseconds (10 ms resolution). */
export function parseStatCpuMs(stat: string): number {
  // The command name (field 2) is in parentheses and may hold spaces: fields count from after it.
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime and stime are fields 14 and 15; `rest` starts at field 3.
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  if (!Number.isSafeInteger(utime) || !Number.isSafeInteger(stime)) {
    throw new Error(`Cannot read CPU time: /proc stat has no utime and stime: ${stat.slice(0, 200)}`);
  }
  return ((utime + stime) * 1000) / userHz;
}

/** The resident set size in bytes from `/proc/PID/status` (its `VmRSS:` line, in kB). */
export function parseStatusRssBytes(status: string): number {
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  if (match === null) throw new Error("Cannot read RSS: /proc status has no VmRSS line");
  return Number(match[1]) * 1024;
}

/** What `/proc` says about a running process at one moment. */
export interface ProcessReading {
  /** Every thread's CPU time: the event loop's, V8's helpers', the runtime's I/O threads'. */
  cpuMs: number;
  /** The main thread's alone, which runs the event loop. */
  loopCpuMs: number;
  rssBytes: number;
  openFds: number;
}

/** Reads a process's CPU time, RSS and open descriptor count from `/proc` (Linux only). */
export function readProcess(pid: number, proc = "/proc"): ProcessReading {
  try {
    return {
      cpuMs: parseStatCpuMs(readFileSync(`${proc}/${pid}/stat`, "utf8")),
      loopCpuMs: parseStatCpuMs(readFileSync(`${proc}/${pid}/task/${pid}/stat`, "utf8")),
      rssBytes: parseStatusRssBytes(readFileSync(`${proc}/${pid}/status`, "utf8")),
      openFds: readdirSync(`${proc}/${pid}/fd`).length,
    };
  } catch (error) {
    throw new Error(`Cannot read process ${pid} from ${proc}: ${(error as Error).message}`, { cause: error });
  }
}

/** CPU time used between two readings (of `cpuMs` or `loopCpuMs`) as a percentage of one core. */
export function cpuPercentOfCore(startCpuMs: number, endCpuMs: number, elapsedMs: number): number {
  if (!(elapsedMs > 0)) throw new Error(`Cannot compute CPU use: elapsed ${elapsedMs} ms`);
  if (endCpuMs < startCpuMs) throw new Error("Cannot compute CPU use: the CPU time went backwards");
  return ((endCpuMs - startCpuMs) / elapsedMs) * 100;
}

/**
 * A process's CPU time so far by thread name (user plus system, in milliseconds): the main thread,
 * which runs the event loop, as "loop", every other under the name the kernel shows for it (the
 * file workers, the runtime's I/O threads, V8's helpers), threads of one name summed.
 */
export function readThreadsCpuMs(pid: number, proc = "/proc"): Map<string, number> {
  const byName = new Map<string, number>();
  for (const tid of readdirSync(`${proc}/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`${proc}/${pid}/task/${tid}/stat`, "utf8");
    } catch {
      continue; // The thread ended between the listing and the read.
    }
    const name = tid === String(pid) ? "loop" : stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    byName.set(name, (byName.get(name) ?? 0) + parseStatCpuMs(stat));
  }
  return byName;
}

/** The CPU time each thread name used between two readings of `readThreadsCpuMs`; names with none left out. */
export function threadsCpuBetween(
  before: ReadonlyMap<string, number>,
  after: ReadonlyMap<string, number>,
): Record<string, number> {
  const used: Record<string, number> = {};
  for (const [name, ms] of after) {
    const delta = ms - (before.get(name) ?? 0);
    if (delta > 0) used[name] = delta;
  }
  return used;
}
