import * as zlib from "node:zlib";
import { parseArgs } from "node:util";
import { compress as lz4Compress } from "lz4js";
import { compress as snappyCompress } from "snappyjs";
import {
  decompressedRecordsBytesMax,
  decompressionPieceBytes,
  decompressionSteps,
} from "../src/log/compression/batch_compression.ts";
import type { DecompressionSteps, StepLimits } from "../src/log/compression/decompression_steps.ts";
import { GzipSteps } from "../src/log/compression/gzip_steps.ts";
import { Lz4Steps } from "../src/log/compression/lz4_steps.ts";
import { snappySteps } from "../src/log/compression/snappy_steps.ts";
import { nativeZstd, ZstdNativeSteps, ZstdSteps } from "../src/log/compression/zstd_steps.ts";
import {
  batchHeaderBytes,
  decodeMessagesInPieces,
  encodeBatch,
  type MessageInput,
} from "../src/log/batch/batch_codec.ts";
import { batchField, computeBatchCrc } from "../src/log/batch/record_batch.ts";
import { initCrc32c } from "../src/runtime/checksum/crc32c.ts";
import { Rng } from "../src/runtime/rng.ts";

/**
 * How long the synchronous steps of an HTTP read's decoding of a compressed batch take, per codec:
 * a batch of 16 MiB of text-like records (words of a small vocabulary), compressed as Kafka's
 * producers do, after two warm-up runs. Prints, per codec, the steps of decompression alone, of a
 * whole piece (1 MiB of output) each and of the codec's own step (`stepOutputBytesMaxByCode`), and
 * every stretch between two pauses of the whole decode as the log's reads run it
 * (`decodeMessagesInPieces`: the decompression's steps, the copy that joins them, the records').
 *
 *   deno task bench:decompression [--runs 5]
 */
// @ts-types="../test/helpers/types/lz4js.d.ts"
// @ts-types="../test/helpers/types/snappyjs.d.ts"

const { values } = parseArgs({ args: Deno.args, options: { runs: { type: "string", default: "5" } } });
const runs = Number(values.runs);
const warmups = 2;
const recordsBytes = 16 * 1024 * 1024;

await initCrc32c();

/** Deno's node:zlib has libzstd's compressor, which Node 20's types do not declare. */
const { gzipSync } = zlib;
const { constants, zstdCompressSync } = zlib as unknown as {
  constants: Record<string, number>;
  zstdCompressSync(input: Uint8Array, options: { params: Record<number, number> }): Uint8Array;
};

function messages(totalBytes: number, payloadBytes: number): MessageInput[] {
  const rng = new Rng(7);
  const words = Array.from({ length: 64 }, (_, i) => `w${i.toString(36)}${"xyz".repeat(i % 5)}`);
  const encoder = new TextEncoder();
  const out: MessageInput[] = [];
  for (let bytes = 0; bytes < totalBytes;) {
    let text = `message ${out.length}:`;
    while (text.length < payloadBytes) text += ` ${words[rng.int(0, words.length - 1)]}`;
    out.push({ key: `k${out.length % 17}`, headers: {}, payload: encoder.encode(text) });
    bytes += payloadBytes;
  }
  return out;
}

function xerial(bytes: Uint8Array): Uint8Array {
  const parts: Uint8Array[] = [
    new Uint8Array([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0, 0, 0, 0, 1, 0, 0, 0, 1]),
  ];
  for (let at = 0; at < bytes.length; at += 32 * 1024) {
    const block = snappyCompress(bytes.subarray(at, at + 32 * 1024));
    const length = new Uint8Array(4);
    new DataView(length.buffer).setInt32(0, block.length);
    parts.push(length, block);
  }
  return joined(parts);
}

function joined(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

function zstd(bytes: Uint8Array, level: number, windowLog: number): Uint8Array {
  const params = {
    [constants.ZSTD_c_compressionLevel!]: level,
    [constants.ZSTD_c_windowLog!]: windowLog,
  };
  // No pledged size: a streaming frame's header, as librdkafka's and Java's, without the content size.
  return new Uint8Array(zstdCompressSync(bytes, { params }));
}

function withRecords(plain: Uint8Array, code: number, records: Uint8Array): Uint8Array {
  const batch = new Uint8Array(batchHeaderBytes + records.length);
  batch.set(plain.subarray(0, batchHeaderBytes));
  batch.set(records, batchHeaderBytes);
  const view = new DataView(batch.buffer);
  view.setInt32(batchField.batchLength, batch.length - 12);
  view.setInt16(batchField.attributes, code);
  view.setUint32(batchField.crc, computeBatchCrc(batch));
  return batch;
}

/** A codec's steps of a whole piece each, whatever step `stepOutputBytesMaxByCode` gives it. */
function wholePieceSteps(code: number, compressed: Uint8Array): DecompressionSteps {
  const limits: StepLimits = {
    pieceBytes: decompressionPieceBytes,
    outputBytesMax: decompressedRecordsBytesMax,
  };
  if (code === 1) return new GzipSteps(compressed, limits);
  if (code === 2) return snappySteps(compressed, limits);
  if (code === 3) return new Lz4Steps(compressed, limits);
  return nativeZstd ? new ZstdNativeSteps(compressed, limits) : new ZstdSteps(compressed, limits);
}

/** Milliseconds of each step `open` gives. */
function stepTimes(open: () => DecompressionSteps): number[] {
  const times: number[] = [];
  for (let run = 0; run < warmups + runs; run++) {
    const decoder = open();
    while (!decoder.done) {
      const started = performance.now();
      decoder.next();
      if (run >= warmups) times.push(performance.now() - started);
    }
    decoder.close();
  }
  return times;
}

/** Milliseconds of each step, of each 1 MiB step, and of each stretch of the whole decode. */
async function measure(code: number, compressed: Uint8Array, batch: Uint8Array) {
  const steps = stepTimes(() => decompressionSteps(code, compressed));
  const pieces = stepTimes(() => wholePieceSteps(code, compressed));
  const stretches: number[] = [];
  for (let run = 0; run < warmups + runs; run++) {
    let resumed = performance.now();
    await decodeMessagesInPieces(batch, async () => {
      if (run >= warmups) stretches.push(performance.now() - resumed);
      await Promise.resolve();
      resumed = performance.now();
    });
    if (run >= warmups) stretches.push(performance.now() - resumed);
  }
  return { steps, pieces, stretches };
}

function summary(ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2);
  return `median ${at(0.5)} ms, p90 ${at(0.9)} ms, max ${sorted.at(-1)!.toFixed(2)} ms (${sorted.length})`;
}

const plain = encodeBatch(0, 1_700_000_000_000, messages(recordsBytes, 4096));
const records = plain.subarray(batchHeaderBytes);
const codecs: [string, number, Uint8Array][] = [
  ["gzip (level 6)", 1, new Uint8Array(gzipSync(records))],
  ["snappy raw (librdkafka)", 2, snappyCompress(records)],
  ["snappy xerial (Java)", 2, xerial(records)],
  ["lz4 (lz4js: 4 MiB linked blocks)", 3, lz4Compress(records)],
  ["zstd level 3, 2 MiB window (librdkafka)", 4, zstd(records, 3, 21)],
  ["zstd level 19, 8 MiB window", 4, zstd(records, 19, 23)],
  ["zstd level 19, 128 MiB window (fzstd reads it as 64 MiB)", 4, zstd(records, 19, 27)],
];
console.log(
  `${Deno.build.os} ${Deno.build.arch}, Deno ${Deno.version.deno}: ${records.length} bytes of records`,
);
for (const [name, code, compressed] of codecs) {
  const { steps, pieces, stretches } = await measure(code, compressed, withRecords(plain, code, compressed));
  console.log(`${name}: ${compressed.length} bytes`);
  console.log(`  a step of 1 MiB of output: ${summary(pieces)}`);
  console.log(`  the codec's step: ${summary(steps)}`);
  console.log(`  whole decode, between pauses: ${summary(stretches)}`);
}
const small = encodeBatch(0, 1_700_000_000_000, messages(1024 * 1024, 100));
const { stretches } = await measure(1, new Uint8Array(gzipSync(small.subarray(batchHeaderBytes))), small);
console.log(`1 MiB of 100-byte records (uncompressed), between pauses: ${summary(stretches)}`);
