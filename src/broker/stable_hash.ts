const utf8 = new TextEncoder();

/**
 * FNV-1a, 32 bits, over UTF-8 text or bytes: a stable hash for partition placement and key routing
 * that never changes. A text key and its UTF-8 bytes hash alike.
 */
export function fnv1a32(input: string | Uint8Array): number {
  let hash = 0x811c9dc5;
  const bytes = typeof input === "string" ? utf8.encode(input) : input;
  for (const byte of bytes) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}
