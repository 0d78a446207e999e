import { gunzipSync } from "node:zlib";
import { decompress as zstdDecompress } from "fzstd";
// @ts-types="./types/lz4js.d.ts"
import { decompress as lz4Decompress, decompressBound as lz4DecompressBound } from "lz4js";
// @ts-types="./types/snappyjs.d.ts"
import { uncompress as snappyUncompress } from "snappyjs";
import { RecordBatchError } from "./record_batch.ts";

/**
 * The records of a compressed batch, decompressed, for the one reader that must open them: the HTTP
 * API's reads (a Kafka fetch serves the batch as stored). Codes as Kafka's attributes have them:
 * 1 gzip, 2 snappy (raw, or in the xerial framing Java clients write), 3 lz4 (the LZ4 frame
 * format), 4 zstd. One batch is one piece of work; what it may grow to is bounded.
 */

/** Bytes a batch's records may decompress to at most; more is refused as corrupt. */
export const decompressedRecordsBytesMax = 64 * 1024 * 1024;

const xerialMagic = [0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00];
const xerialHeaderBytes = 16;

export function decompressRecords(compressionCode: number, compressed: Uint8Array): Uint8Array {
  let records: Uint8Array;
  try {
    records = decompress(compressionCode, compressed);
  } catch (error) {
    if (error instanceof RecordBatchError) throw error;
    throw new RecordBatchError("corrupt", `its ${codecName(compressionCode)} records do not decompress`, {
      cause: error,
    });
  }
  if (records.length > decompressedRecordsBytesMax) {
    throw new RecordBatchError("corrupt", `its records decompress past ${decompressedRecordsBytesMax} bytes`);
  }
  return records;
}

function decompress(code: number, compressed: Uint8Array): Uint8Array {
  switch (code) {
    case 1: {
      const out = gunzipSync(compressed, { maxOutputLength: decompressedRecordsBytesMax + 1 });
      return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
    }
    case 2:
      return isXerial(compressed)
        ? xerialUncompress(compressed)
        : snappyUncompress(compressed, decompressedRecordsBytesMax + 1);
    case 3: {
      const bound = lz4DecompressBound(compressed);
      if (bound > decompressedRecordsBytesMax) {
        throw new RecordBatchError(
          "corrupt",
          `its records decompress past ${decompressedRecordsBytesMax} bytes`,
        );
      }
      return lz4Decompress(compressed, bound);
    }
    case 4:
      return zstdDecompress(compressed);
    default:
      throw new RecordBatchError("corrupt", `compression code ${code} is not one Kafka defines`);
  }
}

function isXerial(bytes: Uint8Array): boolean {
  return bytes.length >= xerialHeaderBytes && xerialMagic.every((b, i) => bytes[i] === b);
}

/** Xerial framing: a 16-byte header, then blocks of a big-endian int32 length and raw Snappy. */
function xerialUncompress(bytes: Uint8Array): Uint8Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const blocks: Uint8Array[] = [];
  let total = 0;
  for (let at = xerialHeaderBytes; at < bytes.length;) {
    if (at + 4 > bytes.length) throw new RecordBatchError("corrupt", "its snappy framing is truncated");
    const length = view.getInt32(at);
    if (length < 0 || at + 4 + length > bytes.length) {
      throw new RecordBatchError("corrupt", "its snappy block runs past the batch");
    }
    const block = snappyUncompress(bytes.subarray(at + 4, at + 4 + length), decompressedRecordsBytesMax + 1);
    total += block.length;
    if (total > decompressedRecordsBytesMax) {
      throw new RecordBatchError(
        "corrupt",
        `its records decompress past ${decompressedRecordsBytesMax} bytes`,
      );
    }
    blocks.push(block);
    at += 4 + length;
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const block of blocks) {
    out.set(block, at);
    at += block.length;
  }
  return out;
}

function codecName(code: number): string {
  return ["none", "gzip", "snappy", "lz4", "zstd"][code] ?? `code ${code}`;
}
