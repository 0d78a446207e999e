import t, { type Test } from "tap";
import { decodeBatchHeader } from "../../src/log/batch/batch_codec.ts";
import type { LogConfig } from "../../src/log/log_config.ts";
import { PartitionLog } from "../../src/log/partition/partition_log.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { CountingDisk } from "../helpers/disks/counting_disk.ts";

// A read that runs out of budget on a large record at the end of a segment ends there: it never
// goes on to the next segment's smaller records, which would leave a gap the reader cannot see.
await initCrc32c();
const disk = new NodeDisk();
const config: LogConfig = {
  segmentSizeBytes: 2500,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 256,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 100,
};

/** Offsets 0 and 1 of 1000 bytes and 2 of 3000 end the first segment; 3 of 10 bytes starts the next. */
async function logWithLargeTail(t: Test) {
  const dir = tempDir(t);
  const log = new PartitionLog(disk, dir, new VirtualClock(), config, [
    await PartitionLog.createSegment(disk, dir, 0),
  ], "t");
  t.teardown(() => log.close());
  for (const size of [1000, 1000, 3000, 10]) {
    await log.append([{ key: null, headers: {}, payload: new Uint8Array(size).fill(size & 0xff) }]);
  }
  t.equal(log.stats().segments[1]?.startOffset, 3, "offset 3 starts the second segment");
  return log;
}

t.test("a poll's byte budget ends the read at the record that does not fit", async (t) => {
  const log = await logWithLargeTail(t);
  const read = await log.read(1, 100, 1500);
  t.same(read.messages.map((m) => m.offset), [1], "offset 2 does not fit, so offset 3 is not read past it");
  t.equal(read.nextOffset, 2);
});

t.test("a Kafka fetch's byte budget ends the read at the batch that does not fit", async (t) => {
  const log = await logWithLargeTail(t);
  const first = await log.readBatches(1, 1);
  const firstBytes = first.sizeBytes;
  const read = await log.readBatches(1, firstBytes + 200);
  const offsets = read.batches.map((b) => decodeBatchHeader(b)!.baseOffset);
  t.same(
    offsets,
    [1],
    "the 3000-byte batch does not fit, so the next segment's small one is not read past it",
  );
  t.equal(read.nextOffset, 2);
  const all = await log.readBatches(0, 1 << 20);
  t.same(
    all.batches.map((b) => decodeBatchHeader(b)!.baseOffset),
    [0, 1, 2, 3],
    "with room, every batch in order",
  );
});

t.test("a Kafka fetch that ends at a batch past its budget reads that batch's header, not the batch", async (t) => {
  const dir = tempDir(t);
  const counting = new CountingDisk();
  const log = new PartitionLog(counting, dir, new VirtualClock(), { ...config, segmentSizeBytes: 4 << 20 }, [
    await PartitionLog.createSegment(counting, dir, 0),
  ], "t");
  t.teardown(() => log.close());
  for (const size of [1000, 1000, 900_000]) {
    await log.append([{ key: null, headers: {}, payload: new Uint8Array(size).fill(size & 0xff) }]);
  }
  counting.fileReadBytes = 0;
  const read = await log.readBatches(0, 2500);
  t.same(read.batches.map((b) => decodeBatchHeader(b)!.baseOffset), [0, 1]);
  t.ok(
    counting.fileReadBytes < 200_000,
    `${counting.fileReadBytes} bytes read: the 900 kB batch that does not fit is not read whole`,
  );
  read.release();
});
