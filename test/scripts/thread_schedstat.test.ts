import { writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { parseSchedstat, readThreadSchedstat, schedstatRates } from "../../scripts/lib/thread_schedstat.ts";
import { tempDir } from "../helpers/temp_dir.ts";

// Linux's schedstat line is read as time on a core and time in the run queue; anything else is
// refused rather than read as zeros, which would claim the loop never waited.
t.test("parseSchedstat reads the first two of three counters and refuses anything else", (t) => {
  t.same(parseSchedstat("123456789 2000000 42\n"), { onCpuNs: 123456789, runqueueWaitNs: 2000000 });
  t.equal(parseSchedstat(""), null, "empty");
  t.equal(parseSchedstat("1 2"), null, "two fields");
  t.equal(parseSchedstat("1 x 3"), null, "not a number");
  t.equal(parseSchedstat("-1 2 3"), null, "negative");
  t.equal(parseSchedstat("1.5 2 3"), null, "not an integer");
  t.end();
});

// A missing file (not Linux) is null, not an error, so the benchmark runs everywhere.
t.test("readThreadSchedstat reads a file and is null when there is none", (t) => {
  const dir = tempDir(t);
  const path = join(dir, "schedstat");
  writeFileSync(path, "5000000 1000000 7\n");
  t.same(readThreadSchedstat(path), { onCpuNs: 5_000_000, runqueueWaitNs: 1_000_000 });
  t.equal(readThreadSchedstat(join(dir, "absent")), null);
  t.end();
});

// Rates are the counters' growth per second of wall time, in milliseconds.
t.test("schedstatRates divides the counters' growth by the elapsed time", (t) => {
  const start = { onCpuNs: 1_000_000_000, runqueueWaitNs: 100_000_000 };
  const end = { onCpuNs: 1_900_000_000, runqueueWaitNs: 150_000_000 };
  t.same(schedstatRates(start, end, 2000), { onCpuMsPerS: 450, runqueueWaitMsPerS: 25 });
  t.equal(schedstatRates(null, end, 2000), null);
  t.equal(schedstatRates(start, null, 2000), null);
  t.equal(schedstatRates(start, end, 0), null);
  t.end();
});

// On Linux the calling thread's own counters exist and grow while it works.
t.test(
  "the calling thread's counters grow with its work on Linux",
  { skip: process.platform !== "linux" },
  (t) => {
    const before = readThreadSchedstat();
    t.not(before, null);
    let x = 0;
    const untilMs = performance.now() + 30;
    while (performance.now() < untilMs) x += Math.sqrt(x + 1);
    const after = readThreadSchedstat();
    t.ok(after!.onCpuNs > before!.onCpuNs, `on-cpu time grew (${x > 0})`);
    t.end();
  },
);
