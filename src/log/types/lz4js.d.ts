/** The part of lz4js (the LZ4 frame format Kafka uses) the log uses. */
export function decompress(src: Uint8Array, maxSize?: number): Uint8Array;
export function decompressBound(src: Uint8Array): number;
