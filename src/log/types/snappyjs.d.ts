/** The part of snappyjs (raw Snappy, no framing) the log uses. */
export function uncompress(compressed: Uint8Array, maxLength?: number): Uint8Array;
