import { gzipSync } from "node:zlib";
import t, { type Test } from "tap";
import { compress as lz4Compress } from "lz4js";
import { compress as snappyCompress } from "snappyjs";
import {
  decompressedRecordsBytesMax,
  decompressionPieceBytes,
  decompressionSteps,
  decompressRecords,
  decompressRecordsWhole,
  stepOutputBytesMaxByCode,
} from "../../../src/log/compression/batch_compression.ts";
import { batchHeaderBytes, encodeBatch } from "../../../src/log/batch/batch_codec.ts";
import { RecordBatchError } from "../../../src/log/batch/record_batch.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import {
  codecCodes,
  codecs,
  compress,
  compressibleMessages,
  concat,
  xerialFrame,
} from "../../helpers/compressed_batches.ts";
import { zstdCompress } from "../../helpers/zstd_compress.ts";

// @ts-types="../helpers/types/lz4js.d.ts"
// @ts-types="../helpers/types/snappyjs.d.ts"

await initCrc32c();
const piece = decompressionPieceBytes;
const records = encodeBatch(0, 1_700_000_000_000, compressibleMessages(6 * 1024 * 1024 + 5000))
  .subarray(batchHeaderBytes);

/** Runs every step of `compressed`; each step's output, and the whole. */
function runSteps(code: number, compressed: Uint8Array) {
  const steps = decompressionSteps(code, compressed);
  const stepBytes: number[] = [];
  const chunks: Uint8Array[] = [];
  try {
    while (!steps.done) {
      const out = steps.next();
      chunks.push(...out);
      stepBytes.push(out.reduce((n, c) => n + c.length, 0));
    }
  } finally {
    steps.close();
  }
  return { stepBytes, whole: concat(chunks) };
}

function sameBytes(t: Test, actual: Uint8Array, expected: Uint8Array, what: string) {
  t.ok(actual.length === expected.length && Buffer.from(actual).equals(Buffer.from(expected)), what);
}

/** An LZ4 frame as Java's and librdkafka's: independent 64 KiB blocks, checksums, a content size. */
function lz4IndependentFrame(bytes: Uint8Array): Uint8Array {
  const header = new Uint8Array(15);
  const view = new DataView(header.buffer);
  view.setUint32(0, 0x184d2204, true);
  header[4] = 0x40 | 0x20 | 0x10 | 0x08 | 0x04; // version 1, independent, block and content checksums, size
  header[5] = 4 << 4; // 64 KiB blocks
  view.setUint32(6, bytes.length, true);
  const parts: Uint8Array[] = [new Uint8Array([0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 9, 9, 9]), header];
  for (let at = 0; at < bytes.length; at += 64 * 1024) {
    const frame = lz4Compress(bytes.subarray(at, at + 64 * 1024));
    // lz4js's frame: magic, descriptor (3 bytes), the one block (size word and data), the end mark.
    parts.push(frame.subarray(7, frame.length - 4), new Uint8Array(4));
  }
  parts.push(new Uint8Array(4), new Uint8Array(4)); // the end mark, the content checksum
  return concat(parts);
}

t.test("each codec's records of 6 MiB decompress exactly, no step producing more than one piece", async (t) => {
  for (const codec of codecs) {
    const compressed = compress(codec, records);
    const { stepBytes, whole } = runSteps(codecCodes[codec], compressed);
    sameBytes(t, whole, records, `${codec}: the records, byte for byte`);
    t.ok(
      stepBytes.every((n) => n <= piece),
      `${codec}: at most ${piece} bytes a step (${Math.max(...stepBytes)})`,
    );
    t.ok(stepBytes.length >= Math.ceil(records.length / piece), `${codec}: ${stepBytes.length} steps`);
    let pauses = 0;
    const paused = await decompressRecords(
      codecCodes[codec],
      compressed,
      () => (pauses++, Promise.resolve()),
    );
    sameBytes(t, paused, records, `${codec}: the same through decompressRecords`);
    t.ok(pauses >= stepBytes.length - 1, `${codec}: a pause between two steps (${pauses})`);
  }
});

t.test("zstd: streaming frames (no content size, a checksum), a window past the bound, several frames", (t) => {
  const variants: [string, Uint8Array][] = [
    ["a streaming header with a checksum", zstdCompress(records, { checksum: true })],
    ["a single segment: its content size, its window", zstdCompress(records, { contentSize: true })],
    ["a 128 MiB window (level 19)", zstdCompress(records, { level: 19, windowLog: 27 })],
    [
      "two frames",
      concat([zstdCompress(records.subarray(0, 3_000_000)), zstdCompress(records.subarray(3_000_000))]),
    ],
  ];
  for (const [what, compressed] of variants) {
    const { stepBytes, whole } = runSteps(4, compressed);
    sameBytes(t, whole, records, `${what}: exact`);
    t.ok(stepBytes.every((n) => n <= piece), `${what}: at most one piece a step`);
  }
  t.end();
});

t.test("lz4: independent 64 KiB blocks with checksums and a content size, after a skippable frame", (t) => {
  const noisy = records.slice();
  // Some incompressible bytes, so that lz4js stores a block uncompressed.
  for (let i = 0; i < 70_000; i++) noisy[1_000_000 + i] = (i * 2654435761) >>> 24;
  const { stepBytes, whole } = runSteps(3, lz4IndependentFrame(noisy));
  sameBytes(t, whole, noisy, "exact");
  t.ok(stepBytes.every((n) => n <= piece));
  const lying = lz4IndependentFrame(noisy);
  new DataView(lying.buffer).setUint32(11 + 6, noisy.length - 1, true);
  t.throws(() => decompressRecordsWhole(3, lying), /decodes to \d+ bytes, not/, "a content size that lies");
  t.end();
});

t.test("snappy: a xerial block larger than a piece is cut within the block", (t) => {
  const { stepBytes, whole } = runSteps(2, xerialFrame(records, 4 * 1024 * 1024));
  sameBytes(t, whole, records, "exact");
  t.ok(stepBytes.every((n) => n <= piece));
  t.end();
});

t.test("a decompression bomb past 64 MiB is refused as corrupt, in every codec", async (t) => {
  const zeros = new Uint8Array(decompressedRecordsBytesMax + 1024 * 1024);
  const bombs: [string, number, Uint8Array][] = [
    ["gzip", 1, new Uint8Array(gzipSync(zeros))],
    ["snappy", 2, snappyCompress(zeros)],
    ["xerial", 2, xerialFrame(zeros)],
    ["lz4", 3, lz4Compress(zeros)],
    ["zstd with its content size", 4, zstdCompress(zeros, { contentSize: true })],
    ["zstd without", 4, zstdCompress(zeros)],
  ];
  for (const [what, code, bomb] of bombs) {
    t.ok(bomb.length < 4 * 1024 * 1024, `${what}: ${bomb.length} bytes`);
    let pauses = 0;
    const error = await decompressRecords(code, bomb, () => (pauses++, Promise.resolve())).catch((e) => e);
    t.ok(error instanceof RecordBatchError && error.refusal === "corrupt", `${what}: corrupt`);
    t.match(error.message, /decompress past 67108864 bytes/, what);
    const steps = decompressedRecordsBytesMax / stepOutputBytesMaxByCode[code]!;
    t.ok(pauses <= steps + 1, `${what}: refused by the step past the bound (${pauses} pauses)`);
  }
});

t.test("truncated or damaged records are corrupt, never another failure, and every decode ends", (t) => {
  const small = records.subarray(0, 200_000);
  for (const codec of codecs) {
    const compressed = compress(codec, small);
    for (const cut of [0, 1, 7, 20, compressed.length >> 1, compressed.length - 1]) {
      const error = (() => {
        try {
          decompressRecordsWhole(codecCodes[codec], compressed.subarray(0, cut));
          return null;
        } catch (e) {
          return e;
        }
      })();
      t.ok(
        error instanceof RecordBatchError && error.refusal === "corrupt",
        `${codec} cut at ${cut}: corrupt`,
      );
    }
    let refused = 0;
    for (let i = 0; i < 200; i++) {
      const damaged = compressed.slice();
      damaged[(i * 7919) % damaged.length]! ^= 1 << (i % 8);
      try {
        const out = decompressRecordsWhole(codecCodes[codec], damaged);
        t.ok(out.length <= decompressedRecordsBytesMax);
      } catch (error) {
        if (!(error instanceof RecordBatchError) || error.refusal !== "corrupt") throw error;
        refused++;
      }
    }
    t.comment(`${codec}: ${refused} of 200 damaged inputs refused, the rest decoded to other bytes`);
  }
  t.throws(() => decompressionSteps(5, new Uint8Array(10)), /compression code 5/);
  t.end();
});

t.test("empty output and the smallest inputs", (t) => {
  for (const codec of codecs) {
    t.same(decompressRecordsWhole(codecCodes[codec], compress(codec, new Uint8Array(0))).length, 0, codec);
  }
  t.end();
});

t.test("a step may end anywhere: tiny pieces cut literals, matches and copies, and still decode exactly", (t) => {
  const sample = records.subarray(0, 300_000);
  for (const codec of codecs) {
    const compressed = compress(codec, sample);
    for (const pieceBytes of [1, 7, 4099]) {
      const steps = decompressionSteps(codecCodes[codec], compressed, {
        pieceBytes,
        outputBytesMax: 1 << 20,
      });
      const chunks: Uint8Array[] = [];
      let largest = 0;
      while (!steps.done) {
        const out = steps.next();
        chunks.push(...out);
        largest = Math.max(largest, out.reduce((n, c) => n + c.length, 0));
      }
      steps.close();
      sameBytes(t, concat(chunks), sample, `${codec} in pieces of ${pieceBytes}: exact`);
      // A zstd step takes one block at least: fzstd cannot stop within one.
      const bound = codec === "zstd" ? Math.max(pieceBytes, 128 * 1024) : pieceBytes;
      t.ok(largest <= bound, `${codec} in pieces of ${pieceBytes}: at most ${bound} a step (${largest})`);
    }
  }
  t.end();
});
