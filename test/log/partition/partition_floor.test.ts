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

// The partition's floor state machine with its durable home, the superblock.
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
const floor = (upToOffset: number, purgeGeneration = 0) => ({
  kind: "advance_tiered_floor" as const,
  partition: "1/1/0",
  purgeGeneration,
  upToOffset,
});

t.test("the floor is persisted on every advance and restored at reopen, never from zero", async (t) => {
  const disk = new NodeDisk();
  const data = tempDir(t);
  const p = await Partition.create(disk, new VirtualClock(), new Rng(1), data, address, config);
  for (let i = 0; i < 10; i++) await p.log.append([{ key: null, headers: {}, payload: new Uint8Array([i]) }]);
  t.equal(await p.applyFloor(floor(4)), "advanced");
  t.equal(await p.applyFloor(floor(2)), "unchanged");
  t.equal(await p.applyFloor(floor(11)), "rejected_beyond_end", "past the committed end (10)");
  t.equal((await readSuperblock(disk, p.dir))?.tieredUpToOffset, 4, "on disk");
  await p.close();
  const reopened = await Partition.open(disk, new VirtualClock(), data, address, config, silentLogger());
  t.equal(reopened.superblock.tieredUpToOffset, 4, "restored at boot");
  await reopened.close();
});

t.test("a purge resets the floor to 0 with the next generation; the old generation's commands are rejected", async (t) => {
  const disk = new NodeDisk();
  const p = await Partition.create(disk, new VirtualClock(), new Rng(1), tempDir(t), address, config);
  await p.log.append([{ key: null, headers: {}, payload: new Uint8Array([1]) }, {
    key: null,
    headers: {},
    payload: new Uint8Array([2]),
  }]);
  await p.applyFloor(floor(2));
  await p.purge();
  t.same({ g: p.superblock.purgeGeneration, f: p.superblock.tieredUpToOffset }, { g: 1, f: 0 });
  await p.log.append([{ key: null, headers: {}, payload: new Uint8Array([3]) }]);
  t.equal(await p.applyFloor(floor(1, 0)), "rejected_generation", "an upload that raced the purge");
  t.equal(await p.applyFloor(floor(1, 1)), "advanced");
  t.equal((await readSuperblock(disk, p.dir))?.purgeGeneration, 1);
  await p.close();
});
