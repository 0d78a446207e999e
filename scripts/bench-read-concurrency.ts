/**
 * What many `node:fs` reads in flight at once cost the event loop under Deno: each runs on a
 * blocking-pool thread of its own, and on a small machine those threads take the cores the loop
 * needs. Reads a file (warm in the page cache) with N concurrent readers, and reports the loop
 * thread's time on a core and waiting for one (Linux's `/proc/thread-self/schedstat`), the latest a
 * 1 ms timer fired, and the process's threads. Its findings: docs/TUNING.md, "Reads in flight".
 *
 *   deno run --allow-all scripts/bench-read-concurrency.ts [--readers N] [--read-kib K] [--total-reads R]
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as fs from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    readers: { type: "string", default: "32" },
    "read-kib": { type: "string", default: "1024" },
    "total-reads": { type: "string", default: "12800" },
  },
});
const readers = positive("readers", values.readers);
const readBytes = positive("read-kib", values["read-kib"]) * 1024;
const readsPerReader = Math.ceil(positive("total-reads", values["total-reads"]) / readers);

function positive(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) {
    throw new Error(`Cannot run: --${name} must be a positive integer, not ${text}`);
  }
  return n;
}

/** The loop thread's nanoseconds on a core and waiting for one, since it started. */
function schedstat(): { runNs: number; waitNs: number } {
  const [run, wait] = readFileSync("/proc/thread-self/schedstat", "utf8").split(" ").map(Number);
  return { runNs: run!, waitNs: wait! };
}

const fileBytes = 512 * 1024 * 1024;
const dir = mkdtempSync(join(tmpdir(), "strata-read-concurrency-"));
try {
  const path = join(dir, "data.bin");
  const chunk = new Uint8Array(64 * 1024 * 1024).fill(7);
  writeFileSync(path, new Uint8Array(0));
  for (let at = 0; at < fileBytes; at += chunk.length) writeFileSync(path, chunk, { flag: "a" });
  const slots = Math.floor(fileBytes / readBytes);
  const handles = await Promise.all(Array.from({ length: readers }, () => fs.open(path, "r")));
  // Warm, twice, through the buffers the readers use: the reads then measure the threads, not the
  // disk or the first touch of fresh memory.
  const buffers = handles.map(() => new Uint8Array(readBytes));
  for (let pass = 0; pass < 2; pass++) {
    for (let i = 0; i < slots; i++) {
      await handles[i % readers]!.read(buffers[i % readers]!, 0, readBytes, i * readBytes);
    }
  }

  let latestTimerMs = 0;
  let last = performance.now();
  let running = true;
  const watch = () => {
    const now = performance.now();
    latestTimerMs = Math.max(latestTimerMs, now - last - 1);
    last = now;
    if (running) setTimeout(watch, 1);
  };
  setTimeout(watch, 1);

  const before = schedstat();
  const startedMs = performance.now();
  let threadsMax = 0;
  await Promise.all(handles.map(async (handle, r) => {
    const buffer = buffers[r]!;
    for (let i = 0; i < readsPerReader; i++) {
      await handle.read(buffer, 0, readBytes, ((i * 37 + r * 101) % slots) * readBytes);
      if (i % 50 === 0) threadsMax = Math.max(threadsMax, readdirSync("/proc/self/task").length);
    }
  }));
  const wallMs = performance.now() - startedMs;
  const after = schedstat();
  running = false;
  for (const handle of handles) await handle.close();

  const reads = readers * readsPerReader;
  console.log(
    `${readers} readers of ${readBytes / 1024} KiB, ${reads} reads in ${wallMs.toFixed(0)} ms: ` +
      `loop on a core ${((after.runNs - before.runNs) / 1e6).toFixed(0)} ms, ` +
      `waiting for one ${((after.waitNs - before.waitNs) / 1e6).toFixed(0)} ms; ` +
      `a 1 ms timer up to ${latestTimerMs.toFixed(1)} ms late; threads up to ${threadsMax}`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
