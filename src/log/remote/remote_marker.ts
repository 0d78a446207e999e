import { crc32c } from "../../runtime/checksum/crc32c.ts";
import { FormatVersionError, storageFormatVersion } from "../../runtime/format_version_error.ts";

/**
 * The `{stem}.remote` marker a tiered segment leaves on local disk (docs/DESIGN.md, "Markers and the
 * boot rules"; its layout is docs/FORMAT.md, "The `.remote` marker"): a fixed 128-byte record with
 * every field boot needs to rebuild the segment without the network.
 * Little-endian:
 *
 *    0  magic "STRAREMT"       8 bytes
 *    8  version u16 (2)        flags u16 (0)        reserved u32
 *   16  start_offset u64       end_offset u64
 *   32  size u64               index_size u64
 *   48  start_timestamp u64    end_timestamp u64    max_timestamp u64   (microseconds)
 *   72  created_revision u64   purge_generation u64
 *   88  log_checksum 16 bytes: the .log's CRC32 in the first 4, the rest zero
 *  104  record_checksum u64: CRC32C of bytes 0..104 in the low 32 bits
 *  112  padding to 128 (zero)
 */
export const remoteMarkerBytes = 128;
export const remoteMarkerVersion = storageFormatVersion;
const magic = new TextEncoder().encode("STRAREMT");

export interface RemoteMarker {
  startOffset: number;
  endOffset: number;
  sizeBytes: number;
  indexSizeBytes: number;
  startTimestampUs: number;
  endTimestampUs: number;
  maxTimestampUs: number;
  /** 16 hex digits, as the superblock holds it. */
  createdRevision: string;
  purgeGeneration: number;
  logCrc32: number;
}

/** Identity a marker must carry: the partition's incarnation. */
export interface MarkerIdentity {
  createdRevision: string;
  purgeGeneration: number;
}

export class MarkerError extends Error {
  override name = "MarkerError";
  constructor(reason: string) {
    super(`Cannot read remote marker: ${reason}`);
  }
}

export function encodeRemoteMarker(m: RemoteMarker): Uint8Array {
  const bytes = new Uint8Array(remoteMarkerBytes);
  const view = new DataView(bytes.buffer);
  bytes.set(magic, 0);
  view.setUint16(8, remoteMarkerVersion, true);
  const u64 = (at: number, value: number) => view.setBigUint64(at, BigInt(value), true);
  u64(16, m.startOffset);
  u64(24, m.endOffset);
  u64(32, m.sizeBytes);
  u64(40, m.indexSizeBytes);
  u64(48, m.startTimestampUs);
  u64(56, m.endTimestampUs);
  u64(64, m.maxTimestampUs);
  view.setBigUint64(72, BigInt(`0x${m.createdRevision}`), true);
  u64(80, m.purgeGeneration);
  view.setUint32(88, m.logCrc32, true);
  view.setBigUint64(104, BigInt(crc32c(bytes.subarray(0, 104))), true);
  return bytes;
}

/**
 * Decodes and checks a marker: size, magic, version and record checksum. A marker of another
 * version throws `FormatVersionError`; any other fault `MarkerError`.
 */
export function decodeRemoteMarker(bytes: Uint8Array): RemoteMarker {
  if (bytes.length !== remoteMarkerBytes) {
    throw new MarkerError(`expected ${remoteMarkerBytes} bytes, got ${bytes.length}`);
  }
  if (!magic.every((b, i) => bytes[i] === b)) throw new MarkerError("wrong magic");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (Number(view.getBigUint64(104, true)) !== crc32c(bytes.subarray(0, 104))) {
    throw new MarkerError("record checksum mismatch");
  }
  const version = view.getUint16(8, true);
  // A whole marker of another version is no torn one: refused by name, never removed as unfinished.
  if (version !== remoteMarkerVersion) {
    throw new FormatVersionError("a .remote marker", version, remoteMarkerVersion);
  }
  const u64 = (at: number) => Number(view.getBigUint64(at, true));
  return {
    startOffset: u64(16),
    endOffset: u64(24),
    sizeBytes: u64(32),
    indexSizeBytes: u64(40),
    startTimestampUs: u64(48),
    endTimestampUs: u64(56),
    maxTimestampUs: u64(64),
    createdRevision: view.getBigUint64(72, true).toString(16).padStart(16, "0"),
    purgeGeneration: u64(80),
    logCrc32: view.getUint32(88, true),
  };
}
