import { crc32 } from "node:zlib";
import { open } from "node:fs/promises";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCRC32, createXXHash64 } from "hash-wasm";
import { openIsalCrc32c } from "../src/runtime/checksum/isal_crc32c.ts";

/**
 * What one 1 MiB piece costs the event loop, by part: reading it from a (page-cached) segment file,
 * and checksumming it with each candidate. `deno run --allow-all scripts/bench-checksum.ts`.
 * Figures are medians of 200 pieces, in milliseconds per MiB.
 */

const piece = new Uint8Array(1024 * 1024).map((_, i) => (i * 2654435761) >>> 24);
const dir = mkdtempSync(join(tmpdir(), "strata-checksum-"));
const path = join(dir, "segment.log");
writeFileSync(path, new Uint8Array(64 * piece.length).map((_, i) => i & 0xff));
const castagnoli = await createCRC32(0x82f63b78);
const xxhash = await createXXHash64();
const isal = openIsalCrc32c("libisal.so.2");

function median(times: number[]): number {
  times.sort((a, b) => a - b);
  return times[times.length >> 1]!;
}

async function timeAsync(run: (i: number) => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 200; i++) {
    const started = performance.now();
    await run(i);
    times.push(performance.now() - started);
  }
  return median(times);
}

function timeSync(run: () => unknown): number {
  const times: number[] = [];
  for (let i = 0; i < 200; i++) {
    const started = performance.now();
    run();
    times.push(performance.now() - started);
  }
  return median(times);
}

const file = await open(path, "r");
const buffer = new Uint8Array(piece.length);
const read = await timeAsync((i) => file.read(buffer, 0, buffer.length, (i % 64) * buffer.length));
await file.close();
const results = {
  read_page_cached: read,
  crc32c_hash_wasm: timeSync(() => {
    castagnoli.init();
    castagnoli.update(piece);
    return castagnoli.digest("binary");
  }),
  xxhash64_hash_wasm: timeSync(() => {
    xxhash.init();
    xxhash.update(piece);
    return xxhash.digest("binary");
  }),
  crc32c_isal_native: timeSync(() => isal.crc32c(piece)),
  crc32_node_zlib: timeSync(() => crc32(piece)),
};
rmSync(dir, { recursive: true, force: true });
for (const [name, ms] of Object.entries(results)) {
  console.log(`${name.padEnd(22)} ${ms.toFixed(3)} ms per MiB`);
}
