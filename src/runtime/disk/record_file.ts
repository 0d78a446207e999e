import { pack, unpack } from "msgpackr";
import { crc32c } from "../checksum/crc32c.ts";
import type { Disk } from "./disk.ts";
import { replaceFile } from "./file_ops.ts";

/**
 * A small durable record (superblock, consumer offsets, metadata): 8 bytes of magic, the payload
 * length (u32 LE), the payload's CRC32C (u32 LE), then the msgpack payload. Written atomically
 * (`replaceFile`): temp file, fsync, rename over the old one, fsync the directory. A reader sees the old record or
 * the new one, never a mix, and a torn temp file is ignored.
 */
export class CorruptRecordError extends Error {
  override name = "CorruptRecordError";
  constructor(path: string, reason: string) {
    super(`Cannot read ${path}: ${reason}`);
  }
}

const headerBytes = 16;

/**
 * Writes `value` as the record `dir/name`, replacing the old one atomically; `reopenable` opens the
 * temporary file through a bound on open files (`OpenOptions.reopenable`). Not an async function:
 * the caller awaits the replacement's own promise, with no promise hop added (the simulator's I/O
 * order depends on them).
 */
export function writeRecordFile(
  disk: Disk,
  dir: string,
  name: string,
  magic: string,
  value: unknown,
  options: { reopenable?: boolean } = {},
): Promise<void> {
  try {
    return replaceFile(disk, `${dir}/${name}`, recordBytes(magic, value), options);
  } catch (error) {
    return Promise.reject(error);
  }
}

function recordBytes(magic: string, value: unknown): Uint8Array {
  const payload = pack(value);
  const bytes = new Uint8Array(headerBytes + payload.length);
  bytes.set(magicBytes(magic), 0);
  const view = new DataView(bytes.buffer);
  view.setUint32(8, payload.length, true);
  view.setUint32(12, crc32c(payload), true);
  bytes.set(payload, headerBytes);
  return bytes;
}

/** Bound on a record file's size. */
const recordBytesMax = 64 * 1024 * 1024;

/**
 * Reads a record; null when the file does not exist. The file is read whole as a small file
 * (`Disk.readSmallFile`, at most `recordBytesMax`): at boot each partition reads its superblock so.
 */
export async function readRecordFile<T>(disk: Disk, path: string, magic: string): Promise<T | null> {
  const bytes = await disk.readSmallFile(path, recordBytesMax);
  if (bytes === null) return null;
  return decodeRecord<T>(bytes, magic, path);
}

/** A record's value from its bytes (a file's, or an object's that holds one); `source` names them in errors. */
export function decodeRecord<T>(bytes: Uint8Array, magic: string, source: string): T {
  if (bytes.length < headerBytes) throw new CorruptRecordError(source, "shorter than its header");
  const expected = magicBytes(magic);
  if (!expected.every((b, i) => bytes[i] === b)) throw new CorruptRecordError(source, "wrong magic");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = view.getUint32(8, true);
  if (headerBytes + length !== bytes.length) throw new CorruptRecordError(source, "length mismatch");
  const payload = bytes.subarray(headerBytes);
  if (crc32c(payload) !== view.getUint32(12, true)) {
    throw new CorruptRecordError(source, "checksum mismatch");
  }
  return unpack(payload) as T;
}

function magicBytes(magic: string): Uint8Array {
  const bytes = new TextEncoder().encode(magic);
  if (bytes.length !== 8) throw new Error(`Cannot use record magic ${magic}: it must be 8 bytes`);
  return bytes;
}
