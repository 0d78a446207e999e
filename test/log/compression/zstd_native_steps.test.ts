import { execFile } from "node:child_process";
import t from "tap";
import { nativeZstd } from "../../../src/log/compression/zstd_steps.ts";

// Under Deno (as the server runs) zstd decodes through libzstd one bounded call at a time, whatever
// the frame's window; under the suite's Node 20, which has no zstd, through fzstd a block at a time.
interface Result {
  name: string;
  error: string | null;
  exact: boolean;
  steps: number;
  stepBytesMax: number;
  stepMsMedian: number;
  stepMsMax: number;
}

function denoCheck(): Promise<{ nativeZstd: boolean; results: Result[] }> {
  const script = new URL("../../helpers/zstd_native_check.ts", import.meta.url).pathname;
  const options = {
    timeout: 120_000,
    maxBuffer: 1 << 20,
    cwd: new URL("../../..", import.meta.url).pathname,
  };
  return new Promise((resolve, reject) => {
    execFile("deno", ["run", "-A", script], options, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`the check failed: ${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout));
    });
  });
}

t.test("Node 20 has no zstd in node:zlib: fzstd decodes", (t) => {
  t.equal(nativeZstd, false);
  t.end();
});

t.test("under Deno, libzstd decodes in steps of at most 256 KiB, a 128 MiB window too", async (t) => {
  const { nativeZstd: native, results } = await denoCheck();
  t.equal(native, true, "Deno's node:zlib has zstd");
  const byName = new Map(results.map((r) => [r.name, r]));
  for (const name of ["level 3, its own window", "level 19, a 128 MiB window"]) {
    const r = byName.get(name)!;
    t.equal(r.error, null, `${name}: decoded`);
    t.ok(r.exact, `${name}: exactly`);
    t.ok(r.stepBytesMax <= 256 << 10, `${name}: no step past 256 KiB (${r.stepBytesMax})`);
    t.ok(r.steps >= 96, `${name}: ${r.steps} steps for 24 MiB`);
    t.comment(`${name}: step median ${r.stepMsMedian.toFixed(2)} ms, longest ${r.stepMsMax.toFixed(2)} ms`);
  }
  t.match(byName.get("past 64 MiB of output")!.error, /RecordBatchError: .*decompress past 67108864 bytes/);
  t.ok(byName.get("past 64 MiB of output")!.stepBytesMax <= 256 << 10, "the bomb too, a step at a time");
  const cut = byName.get("cut short")!;
  t.notOk(cut.exact, "a frame cut short never decodes to the records");
  t.match(byName.get("not zstd")!.error, /RecordBatchError: .*zstd records do not decompress/);
});
