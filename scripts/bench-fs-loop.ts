/**
 * How much of the event loop's thread a file read or write of 1 MiB pieces takes, per API: a
 * spinner on the loop counts 50 µs slices of free time while 300 MiB go through each API.
 *
 *   deno run --allow-all scripts/bench-fs-loop.ts [--dir PATH]
 *
 * Found with it (docs/TUNING.md, "The write worker"): under Deno, node:fs writes run on the loop's own thread (about
 * 2 % free, promise and callback APIs alike), while node:fs reads and Deno's own file writes leave
 * it about 85 % free; an open and close pair costs the loop about 20 µs.
 */
import * as fs from "node:fs";
import { setImmediate } from "node:timers";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({ args: Deno.args, options: { dir: { type: "string" } } });
const dir = args.dir ?? await Deno.makeTempDir({ prefix: "strata-fs-loop-" });
const piecesCount = 300;
const pieceBytes = 1024 * 1024;
const sliceMs = 0.05;
const piece = new Uint8Array(pieceBytes).fill(7);

type Probe = () => Promise<void>;
const probes: Record<string, Probe> = {
  "nothing (400 ms sleep)": () => new Promise((resolve) => setTimeout(resolve, 400)),
  "node:fs FileHandle.write": async () => {
    const handle = await fs.promises.open(`${dir}/node-write`, "w");
    for (let i = 0; i < piecesCount; i++) await handle.write(piece, 0, pieceBytes, i * pieceBytes);
    await handle.close();
  },
  "node:fs FileHandle.read": async () => {
    const handle = await fs.promises.open(`${dir}/node-write`, "r");
    const buffer = new Uint8Array(pieceBytes);
    for (let i = 0; i < piecesCount; i++) await handle.read(buffer, 0, pieceBytes, i * pieceBytes);
    await handle.close();
  },
  "node:fs callback write": async () => {
    const fd = fs.openSync(`${dir}/node-cb`, "w");
    for (let i = 0; i < piecesCount; i++) {
      await new Promise<void>((resolve, reject) =>
        fs.write(fd, piece, 0, pieceBytes, i * pieceBytes, (error) => error ? reject(error) : resolve())
      );
    }
    fs.closeSync(fd);
  },
  "node:fs open + close": async () => {
    for (let i = 0; i < piecesCount * 10; i++) {
      const handle = await fs.promises.open(`${dir}/node-write`, "r");
      await handle.close();
    }
  },
  "Deno.FsFile.write": async () => {
    const file = await Deno.open(`${dir}/deno-write`, { write: true, create: true, truncate: true });
    for (let i = 0; i < piecesCount; i++) {
      for (let at = 0; at < pieceBytes;) at += await file.write(piece.subarray(at));
    }
    file.close();
  },
};

for (const [name, probe] of Object.entries(probes)) {
  let slices = 0;
  let running = true;
  const spin = () => {
    const start = performance.now();
    while (performance.now() - start < sliceMs) { /* busy: one slice of loop time */ }
    slices++;
    if (running) setImmediate(spin);
  };
  const startedMs = performance.now();
  setImmediate(spin);
  await probe();
  running = false;
  const elapsedMs = performance.now() - startedMs;
  const freePercent = Math.round((100 * slices * sliceMs) / elapsedMs);
  console.log(`${name.padEnd(26)} ${elapsedMs.toFixed(0).padStart(6)} ms, loop thread free ${freePercent} %`);
}
if (args.dir === undefined) await Deno.remove(dir, { recursive: true });
