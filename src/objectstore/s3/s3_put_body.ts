import { Buffer } from "node:buffer";
import { Crc32Stream } from "../../runtime/checksum/crc32.ts";
import type { BodySource, PutOptions } from "../object_store.ts";
import { CorruptError, MalformedError } from "../object_store_errors.ts";

/**
 * The body as sent: counted and checksummed on the way. One piece is held back, so the size and
 * the CRC32 are checked before the final bytes go out: a body that does not match aborts the
 * request before the store has a complete body it could commit. The held piece is a copy: the
 * source may reuse its buffer once the next piece is pulled, and the transport may queue a piece
 * it was handed until the socket drains.
 */
export async function* checkedBody(
  body: BodySource,
  options: PutOptions,
  what: string,
): AsyncGenerator<Uint8Array> {
  // Only a declared checksum is checked; hashing costs about 0.12 ms per MiB
  // (docs/TUNING.md, "Object checksums").
  const crc = options.crc32 === undefined ? null : new Crc32Stream();
  let sent = 0;
  let held: Uint8Array | null = null;
  for await (const piece of body()) {
    sent += piece.length;
    if (sent > options.sizeBytes) {
      throw new MalformedError(`${what}: the body is longer than ${options.sizeBytes} bytes`);
    }
    crc?.update(piece);
    if (held !== null) yield held;
    held = piece.slice();
  }
  if (sent !== options.sizeBytes) {
    throw new MalformedError(`${what}: the body is ${sent} bytes, not ${options.sizeBytes}`);
  }
  if (crc !== null && crc.digest() !== options.crc32) {
    throw new CorruptError(`${what}: the body's CRC32 does not match the one declared`);
  }
  if (held !== null) yield held;
}

/** A CRC32 as `x-amz-checksum-crc32` carries it: the four big-endian bytes, in base64. */
export function crc32Base64(crc: number): string {
  const bytes = new Uint8Array(4);
  new DataView(bytes.buffer).setUint32(0, crc, false);
  return Buffer.from(bytes).toString("base64");
}
