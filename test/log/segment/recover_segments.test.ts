import { readFileSync, truncateSync, unlinkSync, writeFileSync } from "node:fs";
import t, { type Test } from "tap";
import { batchHeaderBytes, type MessageInput } from "../../../src/log/batch/batch_codec.ts";
import type { LogConfig } from "../../../src/log/log_config.ts";
import { PartitionRefusedError } from "../../../src/log/log_errors.ts";
import { PartitionLog } from "../../../src/log/partition/partition_log.ts";
import { recoverSegments } from "../../../src/log/segment/recover_segments.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { silentLogger } from "../../../src/runtime/logger.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

// recoverSegments at boot, over logs written by a PartitionLog and then damaged: torn and corrupt
// tails, holes, missing indexes. The boot of evicted chains (markers) is in eviction.test.ts.
await initCrc32c();
const disk = new NodeDisk();
const config: LogConfig = {
  segmentSizeBytes: 4000,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 512,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 100,
};
const message = (i: number): MessageInput => ({
  key: null,
  headers: {},
  payload: new Uint8Array(200).fill(i),
});

/** Writes `batches` single-message batches, closes the log, and returns the directory and active segment. */
async function writtenLog(t: Test, batches: number) {
  const dir = tempDir(t);
  const log = new PartitionLog(disk, dir, new VirtualClock(), config, [
    await PartitionLog.createSegment(disk, dir, 0),
  ], "t");
  for (let i = 0; i < batches; i++) await log.append([message(i)]);
  const segments = log.stats().segments;
  await log.close();
  const active = segments.at(-1)!;
  const activePath = `${dir}/${String(active.startOffset).padStart(20, "0")}.log`;
  return { dir, segments, activePath };
}

async function reopen(dir: string) {
  const report = await recoverSegments(disk, dir, config.indexIntervalBytes, "t", silentLogger());
  const log = new PartitionLog(disk, dir, new VirtualClock(), config, report.segments, "t");
  return { report, log };
}

t.test("a torn tail at every byte position of the last batch is truncated to the batch before it", async (t) => {
  const { dir, segments, activePath } = await writtenLog(t, 25);
  const active = segments.at(-1)!;
  t.ok(active.endOffset > active.startOffset, "the active segment holds at least two batches");
  const original = readFileSync(activePath);
  const batchBytes = original.length / (active.endOffset - active.startOffset + 1);
  const lastStart = original.length - batchBytes;
  const wrong: string[] = [];
  for (let cut = lastStart; cut < original.length; cut++) {
    writeFileSync(activePath, original.subarray(0, cut));
    const { report, log } = await reopen(dir);
    const read = await log.read(0, 1000, 1 << 24);
    const offsets = read.messages.map((m) => m.offset);
    if (
      log.nextOffset !== 24 || offsets.length !== 24 || offsets.at(-1) !== 23 ||
      report.truncatedBytes !== cut - lastStart
    ) {
      wrong.push(`cut at ${cut}: next ${log.nextOffset}, truncated ${report.truncatedBytes}`);
    }
    await log.close();
  }
  t.same(wrong, [], `every one of ${batchBytes} cut positions recovered offsets 0..23 intact`);
  writeFileSync(activePath, original);
  const { log } = await reopen(dir);
  t.equal(log.nextOffset, 25, "the untorn file recovers all 25");
  t.equal((await log.append([message(99)])).baseOffset, 25, "and appends continue after it");
  await log.close();
});

t.test("a flipped bit in the last batch drops only that batch", async (t) => {
  const { dir, activePath } = await writtenLog(t, 25);
  const bytes = readFileSync(activePath);
  bytes[bytes.length - 10]! ^= 0x01;
  writeFileSync(activePath, bytes);
  const { report, log } = await reopen(dir);
  t.equal(log.nextOffset, 24, "offsets 0..23 remain");
  t.ok(report.truncatedBytes > 0);
  const read = await log.read(20, 10, 1 << 20);
  t.same(read.messages.map((m) => m.payload![0]), [20, 21, 22, 23], "the remaining bytes are the originals");
  await log.close();
});

t.test("a corrupt batch followed by valid ones refuses the partition instead of dropping acknowledged data", async (t) => {
  const { dir, activePath, segments } = await writtenLog(t, 25);
  const active = segments.at(-1)!;
  t.ok(active.endOffset - active.startOffset >= 2, "at least three batches in the active segment");
  const bytes = readFileSync(activePath);
  bytes[batchHeaderBytes + 5]! ^= 0x01; // inside the first batch's records, past its header
  writeFileSync(activePath, bytes);
  await t.rejects(
    recoverSegments(disk, dir, config.indexIntervalBytes, "t", silentLogger()),
    PartitionRefusedError,
  );
  await t.rejects(
    recoverSegments(disk, dir, config.indexIntervalBytes, "t", silentLogger()),
    /followed by valid data/,
  );
});

t.test("a missing middle segment is a hole: the partition is refused with an error naming it", async (t) => {
  const { dir, segments } = await writtenLog(t, 60);
  t.ok(segments.length >= 3);
  const middle = segments[1]!;
  unlinkSync(`${dir}/${String(middle.startOffset).padStart(20, "0")}.log`);
  try {
    await recoverSegments(disk, dir, config.indexIntervalBytes, "3/1/0", silentLogger());
    t.fail("a hole must refuse the partition");
  } catch (error) {
    t.ok(error instanceof PartitionRefusedError);
    t.match((error as Error).message, /^Cannot open partition 3\/1\/0: hole in the chain/);
  }
});

t.test("a missing front prefix is accepted (retention deleted it)", async (t) => {
  const { dir, segments } = await writtenLog(t, 60);
  unlinkSync(`${dir}/${String(segments[0]!.startOffset).padStart(20, "0")}.log`);
  const { log } = await reopen(dir);
  t.equal(log.stats().firstOffset, segments[1]!.startOffset);
  t.equal(log.nextOffset, 60);
  await log.close();
});

t.test("a missing or short index is rebuilt from its log", async (t) => {
  const { dir, segments } = await writtenLog(t, 60);
  const first = `${dir}/${String(segments[0]!.startOffset).padStart(20, "0")}.index`;
  const second = `${dir}/${String(segments[1]!.startOffset).padStart(20, "0")}.index`;
  const originalIndex = readFileSync(first);
  unlinkSync(first);
  truncateSync(second, 5);
  const { report, log } = await reopen(dir);
  t.equal(report.rebuiltIndexes, 2);
  t.same(readFileSync(first), originalIndex, "the rebuilt index equals the one written during appends");
  const read = await log.read(0, 1000, 1 << 24);
  t.equal(read.messages.length, 60);
  await log.close();
});
