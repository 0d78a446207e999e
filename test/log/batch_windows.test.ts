import t from "tap";
import type { LogConfig } from "../../src/log/log_config.ts";
import { PartitionLog } from "../../src/log/partition/partition_log.ts";
import { BufferPool } from "../../src/runtime/memory/buffers.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { tempDir } from "../helpers/temp_dir.ts";

// A Kafka fetch's read windows come from the shard's pool and go back when the read is released, so
// a busy consumer reuses warm buffers; a read in flight keeps its windows, so reuse never shows one
// fetch's bytes in another's answer.
await initCrc32c();
const disk = new NodeDisk();
const config: LogConfig = {
  segmentSizeBytes: 64 << 20,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 4096,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 100,
};

t.test("batch reads borrow their windows from the pool until released", async (t) => {
  const dir = tempDir(t);
  const log = new PartitionLog(disk, dir, new VirtualClock(), config, [
    await PartitionLog.createSegment(disk, dir, 0),
  ], "t");
  t.teardown(() => log.close());
  const pool = new BufferPool({ bufferBytes: 1 << 20, buffersMax: 4 });
  log.useBatchWindows(pool);
  for (let i = 0; i < 30; i++) {
    await log.append([{ key: null, headers: {}, payload: new Uint8Array(100_000).fill(i) }]);
  }
  const first = await log.readBatches(0, 3 << 20);
  t.ok(first.batches.length >= 20, `${first.batches.length} batches`);
  t.ok(pool.lentCount >= 2 && pool.lentCount <= 4, `windows lent: ${pool.lentCount}`);
  const second = await log.readBatches(0, 3 << 20);
  t.equal(pool.lentCount, 4, "the pool lends at most buffersMax; more windows are buffers of their own");
  const firstBytes = first.batches.map((b) => b.slice());
  t.same(second.batches.map((b) => b.slice()), firstBytes, "the same batches");
  first.release();
  second.release();
  t.equal(pool.lentCount, 0, "every window given back");
  t.ok(pool.freeCount >= 2, "and kept for the next read");
  const third = await log.readBatches(0, 3 << 20);
  t.same(third.batches.map((b) => b.slice()), firstBytes, "a read into reused windows reads the same bytes");
  t.ok(pool.lentCount > 0);
  third.release();
  t.equal(pool.lentCount, 0);
});
