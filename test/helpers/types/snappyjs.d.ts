/** The part of snappyjs the tests use: raw Snappy (no framing), as librdkafka sends it. */
export function compress(uncompressed: Uint8Array): Uint8Array;
