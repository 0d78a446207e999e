import { crc32c, crc32cEngineName, initCrc32c, useCrc32cEngine } from "../../src/runtime/checksum/crc32c.ts";
import { openIsalCrc32c } from "../../src/runtime/checksum/isal_crc32c.ts";

/**
 * Run by test/runtime/checksum/isal_crc32c.test.ts under Deno (the foreign function interface is Deno's):
 * compares ISA-L's CRC32C with the WebAssembly hasher on random ranges of random lengths and
 * alignments, and prints `{"engine", "ranges", "bytes", "mismatches"}` as one JSON line.
 * `deno run --allow-ffi --allow-read --allow-env test/helpers/isal_crc32c_agreement.ts [LIBRARY]`
 */

const rangesCount = 3000;
const bufferBytes = 2 * 1024 * 1024 + 64;

await initCrc32c();
const buffer = new Uint8Array(bufferBytes);
for (let at = 0; at < buffer.length; at += 65536) crypto.getRandomValues(buffer.subarray(at, at + 65536));
// Lengths spread over every scale: a few bytes, a record, a batch, more than a 1 MiB piece.
const ranges: Array<[number, number]> = [];
for (let i = 0; i < rangesCount; i++) {
  const length = Math.floor(Math.random() ** 3 * (bufferBytes - 64));
  const start = Math.floor(Math.random() * (bufferBytes - length));
  ranges.push([start, length]);
}
const expected = ranges.map(([start, length]) => crc32c(buffer.subarray(start, start + length)));
useCrc32cEngine(openIsalCrc32c(Deno.args[0] ?? "libisal.so.2"));
let mismatches = 0;
let bytes = 0;
ranges.forEach(([start, length], i) => {
  bytes += length;
  if (crc32c(buffer.subarray(start, start + length)) !== expected[i]) mismatches++;
});
console.log(JSON.stringify({ engine: crc32cEngineName(), ranges: ranges.length, bytes, mismatches }));
