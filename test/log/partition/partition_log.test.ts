import t, { type Test } from "tap";
import type { MessageInput } from "../../../src/log/batch/batch_codec.ts";
import type { LogConfig } from "../../../src/log/log_config.ts";
import { WriteQueueFullError } from "../../../src/log/log_errors.ts";
import { PartitionLog } from "../../../src/log/partition/partition_log.ts";
import { silentLogger } from "../../../src/runtime/logger.ts";
import { BufferPool } from "../../../src/runtime/memory/buffers.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import type { DiskFile, OpenOptions } from "../../../src/runtime/disk/disk.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { recoverSegments } from "../../../src/log/segment/recover_segments.ts";
import { CountingDisk } from "../../helpers/disks/counting_disk.ts";
import { tempDir } from "../../helpers/temp_dir.ts";
import { settlesWithin } from "../../helpers/wait_for.ts";

await initCrc32c();

const config = (overrides: Partial<LogConfig> = {}): LogConfig => ({
  segmentSizeBytes: 1024 * 1024,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 4096,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 1000,
  ...overrides,
});

const message = (i: number, size = 100): MessageInput => ({
  key: `k${i}`,
  headers: { i: String(i) },
  payload: new Uint8Array(size).fill(i % 251),
});

async function newLog(
  t: Test,
  overrides: Partial<LogConfig> = {},
  disk = new NodeDisk(),
  clock = new VirtualClock(),
) {
  const dir = tempDir(t);
  const segment = await PartitionLog.createSegment(disk, dir, 0);
  const log = new PartitionLog(disk, dir, clock, config(overrides), [segment], "test");
  t.teardown(() => log.close());
  return { log, dir, disk, clock };
}

/** Closes a log and opens its directory again as recovery would, with the same config. */
async function reopen(
  t: Test,
  log: PartitionLog,
  dir: string,
  disk: NodeDisk,
  overrides: Partial<LogConfig>,
) {
  await log.close();
  const report = await recoverSegments(disk, dir, 4096, "test", silentLogger());
  const reopened = new PartitionLog(
    disk,
    dir,
    new VirtualClock(),
    config(overrides),
    report.segments,
    "test",
  );
  t.teardown(() => reopened.close());
  return { reopened, report };
}

t.test("offsets are dense from 0 and a read spans segments seamlessly", async (t) => {
  const { log } = await newLog(t, { segmentSizeBytes: 1500 });
  let expected = 0;
  for (let b = 0; b < 40; b++) {
    const result = await log.append([message(2 * b), message(2 * b + 1)]);
    t.equal(result.baseOffset, expected);
    expected += 2;
  }
  const stats = log.stats();
  t.ok(stats.segments.length > 5, `${stats.segments.length} segments after rolling by size`);
  t.ok(stats.segments.slice(0, -1).every((s) => s.sealed), "all but the last are sealed");
  for (let i = 1; i < stats.segments.length; i++) {
    t.equal(stats.segments[i]!.startOffset, stats.segments[i - 1]!.endOffset + 1, "contiguous");
  }
  const all = await log.read(0, 1000, 10 * 1024 * 1024);
  t.same(all.messages.map((m) => m.offset), Array.from({ length: 80 }, (_, i) => i));
  t.same(all.messages.map((m) => m.payload![0]), Array.from({ length: 80 }, (_, i) => i % 251));
  t.equal(all.nextOffset, 80);
  const middle = await log.read(37, 5, 10_000);
  t.same(middle.messages.map((m) => m.offset), [37, 38, 39, 40, 41]);
  t.equal(middle.nextOffset, 42);
});

t.test("reads respect count and max_bytes, always return at least one message, and clamp out-of-range offsets", async (t) => {
  const { log } = await newLog(t);
  for (let i = 0; i < 10; i++) await log.append([message(i, 1000)]);
  t.equal((await log.read(0, 3, 1_000_000)).messages.length, 3);
  t.equal((await log.read(0, 100, 2500)).messages.length, 2, "two 1000-byte payloads fit in 2500 bytes");
  t.equal(
    (await log.read(0, 100, 10)).messages.length,
    1,
    "one message even when it alone exceeds max_bytes",
  );
  const beyond = await log.read(50, 10, 10_000);
  t.same(
    { ...beyond, release: null },
    { messages: [], nextOffset: 10, release: null },
    "beyond the end: empty, with the next offset",
  );
});

t.test("the active segment rolls by age, checked from the tick (virtual clock)", async (t) => {
  const clock = new VirtualClock();
  const { log } = await newLog(t, { segmentMaxAgeMs: 60_000 }, new NodeDisk(), clock);
  await log.append([message(0)]);
  clock.advance(59_000);
  log.onTick(clock.nowMs());
  await log.append([message(1)]);
  t.equal(log.stats().segments.length, 1, "not yet 60 s old");
  clock.advance(1_000);
  log.onTick(clock.nowMs());
  await log.append([message(2)]);
  const segments = log.stats().segments;
  t.equal(segments.length, 2, "rolled once the first batch was 60 s old");
  t.same(segments.map((s) => [s.startOffset, s.endOffset, s.sealed]), [[0, 1, true], [2, 2, false]]);
});

t.test("lookup by timestamp finds the first message at or after it", async (t) => {
  const clock = new VirtualClock();
  const { log } = await newLog(t, { segmentSizeBytes: 2000, indexIntervalBytes: 300 }, new NodeDisk(), clock);
  const stamps: number[] = [];
  for (let i = 0; i < 30; i++) {
    clock.advance(10);
    await log.append([message(i)]);
    stamps.push(clock.wallMs() * 1000);
  }
  t.ok(log.stats().segments.length > 2);
  for (const i of [0, 7, 15, 29]) {
    const r = await log.readFromTimestamp(stamps[i]!, 1, 10_000);
    t.equal(r.messages[0]?.offset, i, `timestamp of message ${i}`);
    const between = await log.readFromTimestamp(stamps[i]! - 1, 1, 10_000);
    t.equal(between.messages[0]?.offset, i, `just before message ${i}`);
  }
  const after = await log.readFromTimestamp(stamps[29]! + 1, 1, 10_000);
  t.same({ ...after, release: null }, { messages: [], nextOffset: 30, release: null });
});

t.test("group commit: one fsync serves every batch queued before it", async (t) => {
  const disk = new CountingDisk();
  const { log } = await newLog(t, {}, disk);
  const before = disk.fileSyncs;
  const results = await Promise.all(Array.from({ length: 100 }, (_, i) => log.append([message(i)])));
  t.same(
    results.map((r) => r.baseOffset),
    Array.from({ length: 100 }, (_, i) => i),
    "offsets in arrival order",
  );
  t.ok(disk.fileSyncs - before <= 2, `100 concurrent appends took ${disk.fileSyncs - before} fsyncs`);
});

t.test("with write buffers, a group's batches are one write from one pooled buffer, given back after it", async (t) => {
  const disk = new CountingDisk();
  const { log } = await newLog(t, {}, disk);
  const pool = new BufferPool({ bufferBytes: 64 * 1024, buffersMax: 2 });
  log.useWriteBuffers(pool);
  const before = disk.fileWrites;
  // The first append starts the writer alone; the other 99 queue behind it and make one group.
  await Promise.all(Array.from({ length: 100 }, (_, i) => log.append([message(i)])));
  t.ok(disk.fileWrites - before <= 2, `100 concurrent appends took ${disk.fileWrites - before} writes`);
  t.equal(pool.freeCount, 1, "one buffer served both groups and is back in the pool");
  const read = await log.read(0, 1000, 10 * 1024 * 1024);
  t.same(
    read.messages.map((m) => [m.offset, new TextDecoder().decode(m.key!), m.payload![0]]),
    Array.from({ length: 100 }, (_, i) => [i, `k${i}`, i % 251]),
  );
});

t.test("a reused write buffer never changes what earlier writes put on disk", async (t) => {
  const { log, dir, disk } = await newLog(t, { segmentSizeBytes: 8 * 1024 });
  const pool = new BufferPool({ bufferBytes: 4096, buffersMax: 1 });
  log.useWriteBuffers(pool);
  // Each append is its own group, so every one is encoded into the same buffer over the last.
  for (let i = 0; i < 60; i++) await log.append([message(i, 200 + i)]);
  t.equal(pool.freeCount, 1);
  const { reopened } = await reopen(t, log, dir, disk, { segmentSizeBytes: 8 * 1024 });
  const read = await reopened.read(0, 1000, 10 * 1024 * 1024);
  t.same(
    read.messages.map((m) => [m.offset, m.payload!.length, m.payload!.every((b) => b === m.offset % 251)]),
    Array.from({ length: 60 }, (_, i) => [i, 200 + i, true]),
    "every batch reads back as written, after a restart",
  );
});

t.test("logs sharing write buffers never see one lent while its write is in flight, nor more than the pool keeps", async (t) => {
  // A disk that reads the bytes to write only a turn later, as a thread pool may: a buffer given
  // back before its write finished would be encoded over by the other log first. With one pooled
  // buffer for two logs, the log that finds it out writes from a buffer of its own.
  class LateWriteDisk extends NodeDisk {
    override async open(path: string, options?: OpenOptions): Promise<DiskFile> {
      return late(await super.open(path, options));
    }
    override async createExclusive(path: string): Promise<DiskFile> {
      return late(await super.createExclusive(path));
    }
  }
  const late = (file: DiskFile): DiskFile => {
    const writeAt = file.writeAt.bind(file);
    file.writeAt = async (data, position) => {
      lentMax = Math.max(lentMax, pool.lentCount);
      await new Promise((resolve) => setImmediate(resolve));
      return await writeAt(data, position);
    };
    return file;
  };
  const pool = new BufferPool({ bufferBytes: 64 * 1024, buffersMax: 1 });
  let lentMax = 0;
  const disk = new LateWriteDisk();
  const a = await newLog(t, {}, disk);
  const b = await newLog(t, {}, disk);
  a.log.useWriteBuffers(pool);
  b.log.useWriteBuffers(pool);
  await Promise.all(
    Array.from({ length: 40 }, () => [a.log.append([message(1, 300)]), b.log.append([message(2, 300)])])
      .flat(),
  );
  for (const [log, fill] of [[a.log, 1], [b.log, 2]] as const) {
    const read = await log.read(0, 1000, 10 * 1024 * 1024);
    t.equal(read.messages.length, 40);
    t.ok(
      read.messages.every((m) => m.payload!.every((x) => x === fill)),
      `every message of log ${fill} is its own`,
    );
  }
  t.equal(lentMax, 1, "one pooled buffer was out at a time");
  t.equal(pool.lentCount, 0, "and it is back");
});

t.test("a batch larger than a pooled write buffer is written from a buffer of its own", async (t) => {
  const { log } = await newLog(t);
  const pool = new BufferPool({ bufferBytes: 4096, buffersMax: 1 });
  log.useWriteBuffers(pool);
  await log.append([message(1, 10_000)]);
  t.equal(pool.freeCount, 0, "the pool lent nothing for the large batch");
  await log.append([message(2)]);
  t.equal(pool.freeCount, 1, "a small batch borrowed and gave back");
  const read = await log.read(0, 10, 1024 * 1024);
  t.same(read.messages.map((m) => [m.payload!.length, m.payload![0]]), [[10_000, 1], [100, 2]]);
});

t.test("with fsync = interval, appends are acknowledged without an fsync and synced from the tick", async (t) => {
  const disk = new CountingDisk();
  const clock = new VirtualClock();
  const { log } = await newLog(t, { fsync: "interval", fsyncIntervalMs: 1000 }, disk, clock);
  const before = disk.fileSyncs;
  for (let i = 0; i < 10; i++) await log.append([message(i)]);
  t.equal(disk.fileSyncs - before, 0, "no fsync per append");
  clock.advance(1000);
  log.onTick(clock.nowMs());
  await log.append([message(10)]);
  t.equal(disk.fileSyncs - before, 1, "one fsync once the interval elapsed");
});

t.test("the write queue is bounded: one group in flight plus at most writeQueueMax queued", async (t) => {
  const { log } = await newLog(t, { writeQueueMax: 5 });
  const inFlight = log.append([message(0)]);
  const queued = Array.from({ length: 5 }, (_, i) => log.append([message(i + 1)]));
  await t.rejects(log.append([message(9)]), WriteQueueFullError);
  await Promise.all([inFlight, ...queued]);
  t.equal(log.nextOffset, 6, "every accepted append landed");
});

t.test("retention deletes the oldest sealed segments, never the active one, and reads clamp forward", async (t) => {
  const { log, dir } = await newLog(t, { segmentSizeBytes: 2000 });
  for (let i = 0; i < 40; i++) await log.append([message(i, 500)]);
  const before = log.stats();
  const deleted = await log.enforceRetention((_segment, retained) => retained > 5000);
  t.ok(deleted > 0);
  const after = log.stats();
  t.equal(after.segments.length, before.segments.length - deleted);
  t.ok(after.sizeBytes <= 5000 + 2100, `retained ${after.sizeBytes} bytes`);
  const everything = await log.enforceRetention(() => true);
  t.equal(log.stats().segments.length, 1, `deleted ${everything} more; the active segment stays`);
  const read = await log.read(0, 1, 10_000);
  t.equal(
    read.messages[0]?.offset ?? read.nextOffset,
    log.stats().firstOffset,
    "a read below the first offset clamps forward",
  );
  const files = (await new NodeDisk().list(dir)).filter((n) => n.endsWith(".log"));
  t.equal(files.length, 1, "the deleted segments' files are gone");
});

t.test("purge deletes everything and restarts offsets at 0", async (t) => {
  const { log, dir } = await newLog(t, { segmentSizeBytes: 2000 });
  for (let i = 0; i < 20; i++) await log.append([message(i, 500)]);
  let committed = false;
  await log.purge(() => {
    committed = true;
    return Promise.resolve();
  });
  t.ok(committed);
  t.same(log.stats().segments.map((s) => s.startOffset), [0]);
  t.equal(log.nextOffset, 0);
  t.equal((await log.append([message(1)])).baseOffset, 0);
  t.equal((await new NodeDisk().list(dir)).filter((n) => n.endsWith(".log")).length, 1);
});

t.test("a closed log can be recovered with the same contents", async (t) => {
  const { log, dir, disk } = await newLog(t, { segmentSizeBytes: 3000 });
  for (let i = 0; i < 30; i++) await log.append([message(i, 300)]);
  const before = log.stats();
  const { reopened, report } = await reopen(t, log, dir, disk, { segmentSizeBytes: 3000 });
  t.same(reopened.stats(), before);
  t.equal(report.truncatedBytes, 0);
  t.equal((await reopened.append([message(30)])).baseOffset, 30);
});

t.test("reads racing retention never fail: a deleted segment leaves the list before its files go", async (t) => {
  const { log } = await newLog(t, { segmentSizeBytes: 2000 });
  for (let i = 0; i < 200; i++) await log.append([message(i, 500)]);
  const reads = Array.from({ length: 60 }, () => log.read(0, 5, 1_000_000));
  const deleting = log.enforceRetention(() => true);
  const moreReads = Array.from({ length: 60 }, () => log.read(0, 5, 1_000_000));
  const results = await Promise.allSettled([...reads, ...moreReads]);
  t.equal(await deleting, 16, "one pass deletes its budget of 16 segments");
  t.same(results.filter((r) => r.status === "rejected"), [], "no read failed");
  const first = log.stats().firstOffset;
  t.ok(
    results.every((r) => r.status === "fulfilled" && r.value.messages[0]!.offset <= first),
    "each read started at whatever was first when it looked",
  );
});

t.test("an append made just as the writer finishes is never left waiting (chained in each completion)", async (t) => {
  const { log } = await newLog(t);
  let chain: Promise<unknown> = Promise.resolve();
  for (let i = 0; i < 50; i++) chain = chain.then(() => log.append([message(i)]));
  await settlesWithin(chain, "the chain of 50 appends, each made as the one before completed", 5000);
  t.equal(log.nextOffset, 50, "every append was written");
});
