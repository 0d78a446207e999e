import t from "tap";
import type { LogConfig } from "../../src/log/log_config.ts";
import { Partition } from "../../src/log/partition/partition.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { FileCacheDisk, OpenFileCache } from "../../src/runtime/disk/open_files.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { SimDisk } from "../../src/sim/sim_disk.ts";
import { OpenCountDisk } from "../helpers/disks/open_count_disk.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

await initCrc32c();

const dataPath = "/data";
const partitions = 8;

function logConfig(overrides: Partial<LogConfig>): LogConfig {
  return {
    segmentSizeBytes: 4096,
    segmentMaxAgeMs: null,
    indexIntervalBytes: 1024,
    fsync: "always",
    fsyncIntervalMs: 1000,
    writeQueueMax: 100,
    ...overrides,
  };
}

function addressOf(partitionId: number) {
  return { streamId: 1, topicId: 1, partitionId };
}

/** The disk a server of `maxOpenFiles` would give its partitions, over a counted simulated disk. */
function boundedDisk(raw: SimDisk, maxOpenFiles: number) {
  const counted = new OpenCountDisk(raw);
  const cache = new OpenFileCache({ maxOpenFiles });
  return { counted, cache, disk: new FileCacheDisk(counted, cache) };
}

/** Appends `rounds` messages of 300 bytes to every partition, all partitions at once in each round. */
async function appendRounds(hosted: Partition[], rounds: number): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    await Promise.all(
      hosted.map((p, i) => p.log.append([{ payload: new Uint8Array(300).fill(i), key: null, headers: {} }])),
    );
  }
}

async function readAll(partition: Partition): Promise<number[]> {
  const read = await partition.log.read(0, 1000, 1024 * 1024);
  return read.messages.map((m) => m.offset);
}

t.test("eight partitions on four handles: never more than four files open, and every write durable", async (t) => {
  const raw = new SimDisk(new Rng(3));
  const { counted, cache, disk } = boundedDisk(raw, 4);
  const clock = new VirtualClock();
  const config = logConfig({});
  const hosted: Partition[] = [];
  for (let p = 0; p < partitions; p++) {
    hosted.push(await Partition.create(disk, clock, new Rng(p + 1), dataPath, addressOf(p), config));
  }
  counted.resetMax();
  // 30 messages of about 340 bytes: two rolls per partition at 4 KiB.
  await appendRounds(hosted, 30);
  t.ok(counted.openMax <= 4, `at most 4 files open while 8 partitions wrote (${counted.openMax})`);
  t.ok(cache.evictionsTotal > 0, "idle segment files were closed for others");
  t.ok(hosted.every((p) => p.log.stats().segments.length === 3), "every partition rolled twice");
  for (const p of hosted) t.same(await readAll(p), [...Array(30).keys()], `${p.dir} reads back`);

  raw.crash();
  const reopened = boundedDisk(raw, 4);
  for (let p = 0; p < partitions; p++) {
    const partition = await Partition.open(
      reopened.disk,
      clock,
      dataPath,
      addressOf(p),
      config,
      silentLogger(),
    );
    t.same(
      await readAll(partition),
      [...Array(30).keys()],
      `partition ${p}: every acknowledged message survived`,
    );
    await partition.close();
  }
  t.ok(reopened.counted.openMax <= 4 + 2, "recovery holds the bound beside its own reads");
});

t.test("with fsync = interval, a file closed for another is synced: the tick's fsync loses nothing", async (t) => {
  const raw = new SimDisk(new Rng(5));
  const { counted, disk } = boundedDisk(raw, 2);
  const clock = new VirtualClock();
  const config = logConfig({ fsync: "interval", segmentSizeBytes: 1 << 20 });
  const hosted: Partition[] = [];
  for (let p = 0; p < 4; p++) {
    hosted.push(await Partition.create(disk, clock, new Rng(p + 1), dataPath, addressOf(p), config));
  }
  counted.resetMax();
  await appendRounds(hosted, 5);
  const logPaths = hosted.map((p) => `${p.dir}/${"0".repeat(20)}.log`);
  const syncsBefore = logPaths.map((path) => counted.syncsByPath.get(path) ?? 0);
  t.ok(syncsBefore.some((n) => n > 0), "an acknowledged, unsynced log was fsynced as its handle closed");
  clock.advance(1000);
  for (const p of hosted) p.log.onTick(clock.nowMs());
  // The tick's fsync runs beside the writer; an append after it waits for the writer loop's turn.
  await appendRounds(hosted, 1);
  await waitFor(
    "the tick's fsyncs",
    () => logPaths.some((path, i) => (counted.syncsByPath.get(path) ?? 0) > syncsBefore[i]!),
    { deadlineMs: 5000, pace: realTime(0) },
  );
  t.ok(counted.openMax <= 2, `at most 2 files open (${counted.openMax})`);

  raw.crash();
  for (let p = 0; p < 4; p++) {
    const partition = await Partition.open(
      boundedDisk(raw, 2).disk,
      clock,
      dataPath,
      addressOf(p),
      config,
      silentLogger(),
    );
    const offsets = await readAll(partition);
    t.same(offsets.slice(0, 5), [0, 1, 2, 3, 4], `partition ${p}: what was written before the tick survived`);
    await partition.close();
  }
});
