import { createCRC32, type IHasher } from "hash-wasm";
import { assert } from "../assert.ts";

/** The Castagnoli polynomial (reflected), the CRC32C S3 accepts as `x-amz-checksum-crc32c`. */
const castagnoli = 0x82f63b78;

/** CRC32C of a whole byte range, synchronously. */
export type Crc32cFunction = (data: Uint8Array) => number;

/** A CRC32C implementation and the name the server reports it by. */
export interface Crc32cEngine {
  name: string;
  crc32c: Crc32cFunction;
}

let wasmHasher: IHasher | null = null;
let current: Crc32cFunction | null = null;
let currentName = "";

/**
 * Loads the WebAssembly hasher (once) and makes it the engine in use; call before the first
 * `crc32c`. `useCrc32cEngine` may then put a faster one in its place.
 */
export async function initCrc32c(): Promise<void> {
  wasmHasher ??= await createCRC32(castagnoli);
  current = wasmCrc32c;
  currentName = "wasm";
}

/**
 * Makes `engine` the one every `crc32c` call uses, once it agrees with the WebAssembly hasher on
 * the standard check value and on ranges of every length from 0 to 1 KiB at odd alignments; throws
 * and keeps the engine in use otherwise. A checksum engine that is wrong would refuse every batch
 * or, worse, accept damaged ones, so it is never taken on trust.
 */
export function useCrc32cEngine(engine: Crc32cEngine): void {
  assert(wasmHasher !== null, "useCrc32cEngine called before initCrc32c");
  const check = new TextEncoder().encode("123456789");
  const expected = 0xe3069283;
  const got = engine.crc32c(check) >>> 0;
  if (got !== expected) {
    throw new Error(
      `Cannot use the CRC32C engine ${engine.name}: it gives ${hex(got)} for "123456789", not ${
        hex(expected)
      }`,
    );
  }
  const sample = new Uint8Array(1024 + 8);
  for (let i = 0; i < sample.length; i++) sample[i] = (i * 2654435761) >>> 24;
  for (let length = 0; length <= 1024; length++) {
    const range = sample.subarray(length % 8, (length % 8) + length);
    if (engine.crc32c(range) >>> 0 !== wasmCrc32c(range)) {
      throw new Error(
        `Cannot use the CRC32C engine ${engine.name}: it differs from WebAssembly's on ${length} bytes`,
      );
    }
  }
  current = engine.crc32c;
  currentName = engine.name;
}

/** The name of the engine in use ("wasm" until another is put in its place). */
export function crc32cEngineName(): string {
  assert(current !== null, "crc32cEngineName called before initCrc32c");
  return currentName;
}

/**
 * CRC32C of `data`, synchronously, by the engine in use. Callers hash at most one piece (about
 * 1 MiB) at a time, so this never blocks long, whichever engine it is.
 */
export function crc32c(data: Uint8Array): number {
  assert(current !== null, "crc32c used before initCrc32c");
  return current(data);
}

/** The Castagnoli table of a byte-at-a-time CRC, for `crc32cOfRange`. */
const byteTable = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ castagnoli : c >>> 1;
    table[i] = c >>> 0;
  }
  return table;
})();

/** Bytes `crc32cOfRange` takes at most: it is for small records, where a call into an engine costs more. */
export const crc32cOfRangeBytesMax = 256;

/**
 * CRC32C of `bytes[from, to)`, a byte at a time from a table, allocating nothing: for records of a
 * few dozen bytes (a remote table's, 104), of which a boot may check a hundred thousand, where an
 * engine's call and its result's allocation cost more than the sum.
 */
export function crc32cOfRange(bytes: Uint8Array, from: number, to: number): number {
  assert(
    from >= 0 && to <= bytes.length && to - from <= crc32cOfRangeBytesMax,
    `crc32cOfRange takes at most ${crc32cOfRangeBytesMax} bytes inside the array`,
  );
  let c = 0xffffffff;
  for (let i = from; i < to; i++) c = byteTable[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/**
 * The WebAssembly hasher (hash-wasm's, slicing by 8; it copies the bytes into its own memory).
 * One shared hasher serves every caller: there is no await between its init and digest, so two
 * callers on the one event loop can never interleave.
 */
function wasmCrc32c(data: Uint8Array): number {
  const hasher = wasmHasher!;
  hasher.init();
  hasher.update(data);
  return readU32(hasher.digest("binary"));
}

function readU32(bytes: Uint8Array): number {
  return ((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0;
}

function hex(value: number): string {
  return value.toString(16).padStart(8, "0");
}
