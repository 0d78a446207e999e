import { gzipSync } from "node:zlib";
import { compress as lz4Compress } from "lz4js";
import { compress as snappyCompress } from "snappyjs";
import { batchHeaderBytes, encodeBatch, type MessageInput } from "../../src/log/batch/batch_codec.ts";
import { batchField, computeBatchCrc } from "../../src/log/batch/record_batch.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { zstdCompress } from "./zstd_compress.ts";

// @ts-types="./types/lz4js.d.ts"
// @ts-types="./types/snappyjs.d.ts"

/** Kafka's codecs as producers write them; snappy in both of its shapes. */
export type Codec = "gzip" | "snappy" | "xerial" | "lz4" | "zstd";
export const codecs: readonly Codec[] = ["gzip", "snappy", "xerial", "lz4", "zstd"];
export const codecCodes: Readonly<Record<Codec, number>> = { gzip: 1, snappy: 2, xerial: 2, lz4: 3, zstd: 4 };

const xerialHeader = [0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0, 0, 0, 0, 1, 0, 0, 0, 1];
/** snappy-java's block: 32 KiB of input per raw Snappy block. */
const xerialBlockBytes = 32 * 1024;

/** `bytes` compressed as `codec`'s producers do. */
export function compress(codec: Codec, bytes: Uint8Array): Uint8Array {
  switch (codec) {
    case "gzip":
      return new Uint8Array(gzipSync(bytes));
    case "snappy":
      return snappyCompress(bytes);
    case "xerial":
      return xerialFrame(bytes);
    case "lz4":
      return lz4Compress(bytes);
    case "zstd":
      return zstdCompress(bytes);
  }
}

/** The xerial framing of Java's snappy: a 16-byte header, then [int32 length][raw Snappy] blocks. */
export function xerialFrame(bytes: Uint8Array, blockBytes = xerialBlockBytes): Uint8Array {
  const parts: Uint8Array[] = [new Uint8Array(xerialHeader)];
  for (let at = 0; at < bytes.length; at += blockBytes) {
    const block = snappyCompress(bytes.subarray(at, at + blockBytes));
    const length = new Uint8Array(4);
    new DataView(length.buffer).setInt32(0, block.length);
    parts.push(length, block);
  }
  return concat(parts);
}

export function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** `plain`'s header over other records bytes (compressed as `code` says), with length and CRC set. */
export function withRecords(plain: Uint8Array, code: number, records: Uint8Array): Uint8Array {
  const batch = new Uint8Array(batchHeaderBytes + records.length);
  batch.set(plain.subarray(0, batchHeaderBytes));
  batch.set(records, batchHeaderBytes);
  const view = new DataView(batch.buffer);
  view.setInt32(batchField.batchLength, batch.length - 12);
  view.setInt16(batchField.attributes, code);
  view.setUint32(batchField.crc, computeBatchCrc(batch));
  return batch;
}

/** A batch of `messages` at `baseOffset`, its records compressed as `codec`; and the plain records. */
export function compressedBatch(codec: Codec, baseOffset: number, messages: readonly MessageInput[]) {
  const plain = encodeBatch(baseOffset, 1_700_000_000_000, messages);
  const records = plain.subarray(batchHeaderBytes);
  return { batch: withRecords(plain, codecCodes[codec], compress(codec, records)), records };
}

/**
 * Messages of text-like payloads (words drawn from a small vocabulary, so every codec finds matches)
 * of about 4 KiB each, about `totalBytes` in all.
 */
export function compressibleMessages(totalBytes: number, seed = 7): MessageInput[] {
  const rng = new Rng(seed);
  const words = Array.from({ length: 64 }, (_, i) => `w${i.toString(36)}${"xyz".repeat(i % 5)}`);
  const encoder = new TextEncoder();
  const messages: MessageInput[] = [];
  for (let bytes = 0; bytes < totalBytes;) {
    let text = `message ${messages.length}:`;
    while (text.length < 4096) text += ` ${words[rng.int(0, words.length - 1)]}`;
    const payload = encoder.encode(text);
    messages.push({ key: `k${messages.length % 17}`, headers: { n: String(messages.length) }, payload });
    bytes += payload.length;
  }
  return messages;
}
