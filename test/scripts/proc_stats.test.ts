import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import {
  cpuPercentOfCore,
  parseStatCpuMs,
  parseStatusRssBytes,
  readProcess,
  readThreadsCpuMs,
  threadsCpuBetween,
} from "../../scripts/lib/proc_stats.ts";
import { tempDir } from "../helpers/temp_dir.ts";

// Field 2 of /proc/PID/stat is the command in parentheses, which may hold spaces and parentheses.
const stat = "4242 (deno (main) x) S 1 4242 4242 0 -1 4194560 9000 0 0 0 150 37 0 0 20 0 12 0 100 0 0\n";

t.test("parseStatCpuMs adds utime and stime, counting fields from after the command", (t) => {
  t.equal(parseStatCpuMs(stat), (150 + 37) * 10);
  t.throws(() => parseStatCpuMs("4242 (deno) S 1"), /no utime and stime/);
  t.end();
});

t.test("parseStatusRssBytes reads VmRSS in kB", (t) => {
  t.equal(parseStatusRssBytes("Name:\tdeno\nVmRSS:\t  102400 kB\nThreads:\t12\n"), 102400 * 1024);
  t.throws(() => parseStatusRssBytes("Name:\tdeno\n"), /no VmRSS line/);
  t.end();
});

t.test("cpuPercentOfCore is CPU time over wall time, and refuses an empty or backward interval", (t) => {
  t.equal(cpuPercentOfCore(1000, 1200, 10_000), 2);
  t.throws(() => cpuPercentOfCore(1000, 1200, 0), /elapsed 0 ms/);
  t.throws(() => cpuPercentOfCore(1200, 1000, 10), /went backwards/);
  t.end();
});

// A /proc tree laid out as Linux's: the process, its main thread, and its descriptors.
t.test("readProcess reads a process's and its main thread's CPU, its RSS and its descriptors", (t) => {
  const proc = tempDir(t);
  mkdirSync(join(proc, "7", "task", "7"), { recursive: true });
  mkdirSync(join(proc, "7", "fd"));
  writeFileSync(join(proc, "7", "stat"), stat);
  writeFileSync(join(proc, "7", "task", "7", "stat"), stat.replace("150 37", "100 20"));
  writeFileSync(join(proc, "7", "status"), "VmRSS:\t2048 kB\n");
  for (const fd of ["0", "1", "2", "5"]) writeFileSync(join(proc, "7", "fd", fd), "");
  t.same(readProcess(7, proc), { cpuMs: 1870, loopCpuMs: 1200, rssBytes: 2048 * 1024, openFds: 4 });
  t.throws(() => readProcess(8, proc), /Cannot read process 8/);
  t.end();
});

t.test("readThreadsCpuMs sums threads by name, the main thread as the loop; threadsCpuBetween subtracts", (t) => {
  const proc = tempDir(t);
  const thread = (tid: string, name: string, utime: number) => {
    mkdirSync(join(proc, "7", "task", tid), { recursive: true });
    writeFileSync(
      join(proc, "7", "task", tid, "stat"),
      stat.replace("deno (main) x", name).replace("150 37", `${utime} 0`),
    );
  };
  thread("7", "deno", 100);
  thread("8", "worker-1", 30);
  thread("9", "tokio-runtime-w", 5);
  thread("10", "tokio-runtime-w", 7);
  const before = readThreadsCpuMs(7, proc);
  t.same(Object.fromEntries(before), { loop: 1000, "worker-1": 300, "tokio-runtime-w": 120 });
  thread("7", "deno", 150);
  thread("11", "worker-2", 2);
  t.same(threadsCpuBetween(before, readThreadsCpuMs(7, proc)), { loop: 500, "worker-2": 20 });
  t.end();
});

t.test("readProcess reads this process from the real /proc", {
  skip: process.platform !== "linux" && "/proc is Linux's",
}, (t) => {
  const reading = readProcess(process.pid);
  t.ok(
    reading.rssBytes > 0 && reading.openFds > 0 && reading.cpuMs >= reading.loopCpuMs,
    JSON.stringify(reading),
  );
  t.end();
});
