/** The part of lz4js the tests use: the LZ4 frame format (4 MiB linked blocks), as Kafka's lz4. */
export function compress(src: Uint8Array, maxSize?: number): Uint8Array;
