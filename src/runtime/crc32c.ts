import { createCRC32, type IHasher } from "hash-wasm";
import { assert } from "./assert.ts";

/** The Castagnoli polynomial (reflected), the CRC32C S3 accepts as `x-amz-checksum-crc32c`. */
const castagnoli = 0x82f63b78;

let shared: IHasher | null = null;

/** Loads the WebAssembly hasher once; call before the first `crc32c`. */
export async function initCrc32c(): Promise<void> {
  shared ??= await createCRC32(castagnoli);
}

/**
 * CRC32C of `data`, synchronously. One shared hasher serves every caller: there is no await
 * between its init and digest, so two callers on the one event loop can never interleave.
 * Callers hash at most one piece (about 1 MiB) at a time, so this never blocks long.
 */
export function crc32c(data: Uint8Array): number {
  assert(shared !== null, "crc32c used before initCrc32c");
  shared.init();
  shared.update(data);
  return readU32(shared.digest("binary"));
}

function readU32(bytes: Uint8Array): number {
  return ((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0;
}
