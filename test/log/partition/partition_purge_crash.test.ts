import t from "tap";
import type { LogConfig } from "../../../src/log/log_config.ts";
import { Partition } from "../../../src/log/partition/partition.ts";
import { readSuperblock } from "../../../src/log/partition/superblock.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { silentLogger } from "../../../src/runtime/logger.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

// A purge unlinks every segment and starts an empty log at offset 0 before it writes the new
// generation's superblock. A crash in that window must not leave the old generation's floor over
// the new log, where it would let eviction drop segments that were never uploaded.
await initCrc32c();
const config: LogConfig = {
  segmentSizeBytes: 1 << 20,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 4096,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 100,
};
const address = { streamId: 1, topicId: 1, partitionId: 0 };
const message = (i: number) => [{ key: null, headers: {}, payload: new Uint8Array([i]) }];

t.test("a purge cut short before its superblock is finished at boot: the next generation, floor 0, no offsets", async (t) => {
  const disk = new NodeDisk();
  const data = tempDir(t);
  const p = await Partition.create(disk, new VirtualClock(), new Rng(1), data, address, config);
  for (let i = 0; i < 10; i++) await p.log.append(message(i));
  t.equal(
    await p.applyFloor({
      kind: "advance_tiered_floor",
      partition: "1/1/0",
      purgeGeneration: 0,
      upToOffset: 6,
    }),
    "advanced",
  );
  await p.offsets.set("reader", 8);
  const crash = new Error("the process died before the superblock was written");
  await t.rejects(p.log.purge(() => Promise.reject(crash)), crash);
  t.same(
    [
      (await readSuperblock(disk, p.dir))?.purgeGeneration,
      (await readSuperblock(disk, p.dir))?.tieredUpToOffset,
    ],
    [0, 6],
    "on disk: the old generation and its floor over an empty log",
  );
  await p.close();
  const reopened = await Partition.open(disk, new VirtualClock(), data, address, config, silentLogger());
  t.teardown(() => reopened.close());
  t.match(
    reopened.superblock,
    { purgeGeneration: 1, tieredUpToOffset: 0, deletedUpToOffset: 0 },
    "the purge finished",
  );
  t.match(await readSuperblock(disk, reopened.dir), { purgeGeneration: 1, tieredUpToOffset: 0 }, "durably");
  t.equal(reopened.offsets.get("reader"), null, "the consumer offsets went with the messages");
  t.equal(reopened.log.nextOffset, 0);
  await reopened.log.append(message(0));
  t.equal(
    await reopened.applyFloor({
      kind: "advance_tiered_floor",
      partition: "1/1/0",
      purgeGeneration: 0,
      upToOffset: 1,
    }),
    "rejected_generation",
    "the old generation's floor commands no longer apply",
  );
});

t.test("an empty log at offset 0 with floor 0 is a fresh partition: nothing changes at boot", async (t) => {
  const disk = new NodeDisk();
  const data = tempDir(t);
  const p = await Partition.create(disk, new VirtualClock(), new Rng(1), data, address, config);
  await p.close();
  const reopened = await Partition.open(disk, new VirtualClock(), data, address, config, silentLogger());
  t.teardown(() => reopened.close());
  t.match(reopened.superblock, { purgeGeneration: 0, tieredUpToOffset: 0 });
});
