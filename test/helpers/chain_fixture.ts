import type { Test } from "tap";
import type { LogConfig } from "../../src/log/log_config.ts";
import { SegmentChain } from "../../src/log/segment/segment_chain.ts";
import type { Disk } from "../../src/runtime/disk/disk.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { tempDir } from "./temp_dir.ts";

// A segment chain on a real directory, filled the way the writer loop fills it: append, flush,
// publish, one batch at a time.
await initCrc32c();

export const chainConfig: LogConfig = {
  segmentSizeBytes: 2000,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 512,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 100,
};

/** A chain of `batches` single-message batches of 500 bytes (payload bytes = the offset), closed at teardown. */
export async function filledChain(
  t: Test,
  batches: number,
  disk: Disk = new NodeDisk(),
  clock = new VirtualClock(),
) {
  const dir = tempDir(t);
  const chain = new SegmentChain(disk, dir, clock, [await SegmentChain.createSegment(disk, dir, 0)]);
  for (let i = 0; i < batches; i++) await appendOne(chain, i);
  t.teardown(() => chain.close(null, () => false).catch(() => {}));
  return { chain, dir, clock };
}

/** One batch, as one group of the writer loop: append, write, publish. */
export async function appendOne(chain: SegmentChain, fillByte: number, config = chainConfig) {
  const messages = [{ key: null, headers: {}, payload: new Uint8Array(500).fill(fillByte) }];
  const result = await chain.append({ kind: "messages", messages, stampAppendTime: false }, config);
  await chain.flushPending();
  chain.publishVisible();
  return result;
}
