/**
 * How long a small append's fsync takes beside a writer that fsyncs its own file every step, as a
 * produce's group commit does beside an upload to the `fs` store on the same disk:
 *
 *   deno run --allow-all scripts/bench-fsync-interference.ts [--step-bytes 262144] [--rate-mb-s 250]
 *     [--seconds 10] [--dir PATH]
 *
 * The writer writes steps of `--step-bytes` at `--rate-mb-s` (0: as fast as it can), starting an
 * fsync after each with one in flight, as `SyncBehind` does; `--step-bytes 0` runs no writer. The
 * appender writes 100 KiB and fsyncs every 15 ms. Found with it (docs/TUNING.md, "The fs store's
 * fsync step"): the appends' fsync p99 about halves with 256 KiB steps against 1 MiB ones at the
 * same rate.
 */
import * as fs from "node:fs/promises";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    "step-bytes": { type: "string", default: "262144" },
    "rate-mb-s": { type: "string", default: "250" },
    "seconds": { type: "string", default: "10" },
    "dir": { type: "string" },
  },
});
const stepBytes = Number(args["step-bytes"]);
const rateMbS = Number(args["rate-mb-s"]);
const seconds = Number(args.seconds);
const dir = args.dir ?? await Deno.makeTempDir({ prefix: "strata-fsync-" });
await Deno.mkdir(dir, { recursive: true });
/** The writer's file stops growing here and starts again at 0, so a long run needs no more disk. */
const writerFileBytesMax = 4 * 1024 * 1024 * 1024;
const appendBytes = 100 * 1024;
const appendEveryMs = 15;

let stopped = false;

async function writer(): Promise<number> {
  const file = await fs.open(`${dir}/writer`, "w");
  const step = new Uint8Array(stepBytes).fill(7);
  const startedMs = performance.now();
  let written = 0;
  let syncing: Promise<void> | null = null;
  while (!stopped) {
    await file.write(step, 0, stepBytes, written % writerFileBytesMax);
    written += stepBytes;
    if (syncing !== null) await syncing;
    syncing = file.sync();
    const dueMs = rateMbS > 0 ? startedMs + written / (rateMbS * 1000) : 0;
    const waitMs = dueMs - performance.now();
    if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
  if (syncing !== null) await syncing;
  await file.close();
  return written;
}

const writing = stepBytes > 0 ? writer() : Promise.resolve(0);
const log = await fs.open(`${dir}/log`, "w");
const record = new Uint8Array(appendBytes).fill(1);
const latenciesMs: number[] = [];
const startedMs = performance.now();
for (let at = 0; performance.now() - startedMs < seconds * 1000; at += appendBytes) {
  const beforeMs = performance.now();
  await log.write(record, 0, appendBytes, at);
  await log.sync();
  latenciesMs.push(performance.now() - beforeMs);
  await new Promise((resolve) => setTimeout(resolve, appendEveryMs));
}
stopped = true;
const written = await writing;
await log.close();
if (args.dir === undefined) await Deno.remove(dir, { recursive: true });

latenciesMs.sort((a, b) => a - b);
const quantile = (q: number) =>
  latenciesMs[Math.min(latenciesMs.length - 1, Math.floor(q * latenciesMs.length))]!;
console.log(
  `step ${stepBytes} B at ${rateMbS > 0 ? `${rateMbS} MB/s` : "full speed"}: writer ${
    (written / 1e6 / seconds).toFixed(0)
  } MB/s; append+fsync ms p50 ${quantile(0.5).toFixed(2)} p90 ${quantile(0.9).toFixed(2)} p99 ${
    quantile(0.99).toFixed(2)
  } max ${quantile(1).toFixed(2)} (${latenciesMs.length} appends)`,
);
