import * as zlib from "node:zlib";
import { decompressionSteps } from "../../src/log/compression/batch_compression.ts";
import { nativeZstd } from "../../src/log/compression/zstd_steps.ts";

/**
 * Runs under Deno, whose node:zlib has libzstd (the tap suite's Node 20 has none): decodes zstd
 * frames through `decompressionSteps` as the server does there, and prints one JSON object of what
 * it found. Used by `test/log/compression/zstd_native_steps.test.ts`.
 */

const textLike = (bytes: number) => {
  const out = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i++) out[i] = 32 + ((i * 31 + (i >> 10) * 7) % 90);
  return out;
};
// Node 20's types, which the project checks against, have no zstd; Deno's node:zlib has it.
const zstd = zlib as unknown as {
  zstdCompressSync(input: Uint8Array, options: { params: Record<number, number> }): Uint8Array;
  constants: { ZSTD_c_compressionLevel: number; ZSTD_c_windowLog: number };
};
const compress = (input: Uint8Array, level: number, windowLog: number) =>
  new Uint8Array(zstd.zstdCompressSync(input, {
    params: { [zstd.constants.ZSTD_c_compressionLevel]: level, [zstd.constants.ZSTD_c_windowLog]: windowLog },
  }));

/** Every step's output length and time; the output joined; the error's name and message, if any. */
function decode(compressed: Uint8Array) {
  const steps = decompressionSteps(4, compressed);
  const outputs: Uint8Array[] = [];
  const stepBytes: number[] = [];
  const stepMs: number[] = [];
  try {
    for (let i = 0; i < 100_000 && !steps.done; i++) {
      const started = performance.now();
      const produced = steps.next();
      stepMs.push(performance.now() - started);
      stepBytes.push(produced.reduce((n, b) => n + b.length, 0));
      outputs.push(...produced);
    }
  } catch (error) {
    return {
      error: `${(error as Error).name}: ${(error as Error).message}`,
      stepBytes,
      stepMs,
      output: null,
    };
  } finally {
    steps.close();
  }
  const output = new Uint8Array(outputs.reduce((n, b) => n + b.length, 0));
  outputs.reduce((at, b) => (output.set(b, at), at + b.length), 0);
  return { error: null, stepBytes, stepMs, output };
}

const sameBytes = (a: Uint8Array | null, b: Uint8Array) =>
  a !== null && a.length === b.length && a.every((x, i) => x === b[i]);
const summary = (name: string, input: Uint8Array, compressed: Uint8Array) => {
  const { error, stepBytes, stepMs, output } = decode(compressed);
  const sorted = [...stepMs].sort((x, y) => x - y);
  return {
    name,
    error,
    exact: sameBytes(output, input),
    steps: stepBytes.length,
    stepBytesMax: Math.max(0, ...stepBytes),
    stepMsMedian: sorted[sorted.length >> 1] ?? 0,
    stepMsMax: sorted.at(-1) ?? 0,
  };
};

const records = textLike(24 << 20);
const wide = compress(records, 19, 27);
const results = [
  summary("level 3, its own window", records, compress(records, 3, 0)),
  summary("level 19, a 128 MiB window", records, wide),
  summary("past 64 MiB of output", new Uint8Array(0), compress(new Uint8Array(80 << 20), 1, 0)),
  summary("cut short", records, wide.subarray(0, wide.length >> 1)),
  summary("not zstd", records, textLike(4096)),
];
console.log(JSON.stringify({ nativeZstd, results }));
