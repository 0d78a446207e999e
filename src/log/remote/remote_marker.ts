import { crc32c } from "../../runtime/checksum/crc32c.ts";
import { FormatVersionError, storageFormatVersion } from "../../runtime/format_version_error.ts";

/**
 * A tiered segment's marker, a record of its partition's remote table (docs/DESIGN.md, "Markers and
 * the boot rules"; its layout is docs/FORMAT.md, "The remote table"; a `{stem}.remote` file of the
 * older layout holds one): a fixed 128-byte record with every field boot needs to rebuild the
 * segment without the network.
 * Little-endian:
 *
 *    0  magic "STRAREMT"       8 bytes
 *    8  version u16 (2)        flags u16            reserved u32
 *   16  start_offset u64       end_offset u64
 *   32  size u64               index_size u64
 *   48  start_timestamp u64    end_timestamp u64    max_timestamp u64   (microseconds)
 *   72  created_revision u64   purge_generation u64
 *   88  log_checksum 16 bytes: the .log's CRC32 in the first 4, the rest zero
 *  104  record_checksum u64: CRC32C of bytes 0..104 in the low 32 bits
 *  112  padding to 128 (zero)
 *
 * Flags: bit 0 (`mergedFlag`) marks a merged segment, whose objects are keyed by its start and end
 * offsets (docs/DESIGN.md, "The adjacent-segment merger"); every other bit is zero.
 */
export const remoteMarkerBytes = 128;
export const remoteMarkerVersion = storageFormatVersion;
/** The first 8 bytes of a marker, and of a marker record of the remote table. */
export const markerMagic = new TextEncoder().encode("STRAREMT");
/** The flag of a merged segment's marker. */
export const mergedFlag = 0x1;

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
  /** A merged segment: its objects are keyed by its start and end offsets, not its start alone. */
  merged: boolean;
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
  bytes.set(markerMagic, 0);
  view.setUint16(8, remoteMarkerVersion, true);
  view.setUint16(10, m.merged ? mergedFlag : 0, true);
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
  if (!markerMagic.every((b, i) => bytes[i] === b)) throw new MarkerError("wrong magic");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(108, true) !== 0 || view.getUint32(104, true) !== crc32c(bytes.subarray(0, 104))) {
    throw new MarkerError("record checksum mismatch");
  }
  const version = view.getUint16(8, true);
  // A whole marker of another version is no torn one: refused by name, never removed as unfinished.
  if (version !== remoteMarkerVersion) {
    throw new FormatVersionError("a remote marker", version, remoteMarkerVersion);
  }
  return markerFieldsAt(view, 0, emptyMarker());
}

/** A marker to fill with `markerFieldsAt`. */
export function emptyMarker(): RemoteMarker {
  return {
    startOffset: 0,
    endOffset: 0,
    sizeBytes: 0,
    indexSizeBytes: 0,
    startTimestampUs: 0,
    endTimestampUs: 0,
    maxTimestampUs: 0,
    createdRevision: "",
    purgeGeneration: 0,
    logCrc32: 0,
    merged: false,
  };
}

/**
 * Fills `into` with the fields of the marker at byte `at` of `view`, whose magic, version and
 * checksum the caller has checked, and returns it: a table's records are read through one marker
 * rather than a new one each. A field past 2^53, or a flag this version does not know, throws
 * `MarkerError`.
 */
export function markerFieldsAt(view: DataView, at: number, into: RemoteMarker): RemoteMarker {
  const flags = view.getUint16(at + 10, true);
  if ((flags & ~mergedFlag) !== 0) throw new MarkerError(`unknown flags 0x${flags.toString(16)}`);
  into.merged = (flags & mergedFlag) !== 0;
  into.startOffset = u64At(view, at + 16);
  into.endOffset = u64At(view, at + 24);
  into.sizeBytes = u64At(view, at + 32);
  into.indexSizeBytes = u64At(view, at + 40);
  into.startTimestampUs = u64At(view, at + 48);
  into.endTimestampUs = u64At(view, at + 56);
  into.maxTimestampUs = u64At(view, at + 64);
  into.createdRevision = revisionAt(view, at + 72);
  into.purgeGeneration = u64At(view, at + 80);
  into.logCrc32 = view.getUint32(at + 88, true);
  return into;
}

/** The little-endian u64 at `at`, which offsets, sizes and microsecond timestamps keep below 2^53. */
export function u64At(view: DataView, at: number): number {
  const high = view.getUint32(at + 4, true);
  if (high >= 2 ** 21) throw new MarkerError(`the number at byte ${at} is past 2^53`);
  const low = view.getUint32(at, true);
  // Small values stay small integers in the engine, not boxed doubles.
  return high === 0 ? low : high * 2 ** 32 + low;
}

/**
 * The revision's 16 hex digits. A partition's markers all carry one revision: the last one decoded
 * is given again rather than a new string for each of a table's records.
 */
let lastRevision = { high: -1, low: -1, hex: "" };

function revisionAt(view: DataView, at: number): string {
  const low = view.getUint32(at, true);
  const high = view.getUint32(at + 4, true);
  if (high !== lastRevision.high || low !== lastRevision.low) {
    const hex = high.toString(16).padStart(8, "0") + low.toString(16).padStart(8, "0");
    lastRevision = { high, low, hex };
  }
  return lastRevision.hex;
}
