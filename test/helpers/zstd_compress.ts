import { execFileSync } from "node:child_process";

/** How `zstdCompress` compresses: zstd's level, its window (log2 bytes; 0: the level's), a content size. */
export interface ZstdOptions {
  level?: number;
  windowLog?: number;
  /**
   * Declare the content size (a single-segment frame, whose window is its size); by default the
   * header of a streaming compression, as Kafka's clients write it: no size, a window by level.
   */
  contentSize?: boolean;
  /** End the frame with its content checksum. */
  checksum?: boolean;
}

// Node 20, which runs the tests, has no zstd in node:zlib; Deno's node:zlib has libzstd's, so the
// compression runs in a Deno child: the same library Kafka clients link.
const script = `
import { constants, zstdCompressSync } from "node:zlib";
const [level, windowLog, contentSize, checksum] = Deno.args.map(Number);
const input = new Uint8Array(await new Response(Deno.stdin.readable).arrayBuffer());
const params = { [constants.ZSTD_c_compressionLevel]: level, [constants.ZSTD_c_checksumFlag]: checksum };
if (windowLog > 0) params[constants.ZSTD_c_windowLog] = windowLog;
const pledged = contentSize === 1 ? { pledgedSrcSize: input.length } : {};
const writer = Deno.stdout.writable.getWriter();
await writer.write(zstdCompressSync(input, { params, ...pledged }));
await writer.close();
`;

/** `bytes` as one Zstandard frame, compressed by libzstd. */
export function zstdCompress(bytes: Uint8Array, options: ZstdOptions = {}): Uint8Array {
  const args = [
    options.level ?? 3,
    options.windowLog ?? 0,
    options.contentSize === true ? 1 : 0,
    options.checksum === true ? 1 : 0,
  ];
  const out = execFileSync("deno", ["eval", script, ...args.map(String)], {
    input: bytes,
    maxBuffer: 256 * 1024 * 1024,
  });
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}
