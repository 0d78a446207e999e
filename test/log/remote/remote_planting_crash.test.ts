import t from "tap";
import { Partition, partitionDir } from "../../../src/log/partition/partition.ts";
import { settlePlantedDir } from "../../../src/log/remote/remote_planting.ts";
import { readSuperblock } from "../../../src/log/partition/superblock.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { silentLogger } from "../../../src/runtime/logger.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { CrashingDisk } from "../../helpers/disks/crashing_disk.ts";
import { tempDir } from "../../helpers/temp_dir.ts";
import {
  plantingConfig,
  replicaAddress,
  replicaSource,
  sourceMarker,
  writeCreatedReplica,
} from "../../helpers/planted_partition.ts";

// A read replica's planting crashed at every durable step in turn: at the next boot the directory
// settles into a whole chain whose floor, source watermark and epochs agree with its markers, and
// planting what is missing then brings it to where an uncrashed planting would have.
await initCrc32c();
const disk = new NodeDisk();
const config = plantingConfig;
const address = replicaAddress;
const source = replicaSource;
const marker = sourceMarker;
/** Each planted segment starts a new leader epoch: 3 at 20, 4 at 30. */
const planted = [marker(20), marker(30)];
const plantedEpochs = [{ epoch: 3, startOffset: 20 }, { epoch: 4, startOffset: 30 }];

async function seeded(dataPath: string): Promise<void> {
  await writeCreatedReplica(disk, dataPath, [{ epoch: 1, startOffset: 0 }]);
}

t.test("a planting crashed at any durable step settles at boot, and planting again completes it", async (t) => {
  let completed = false;
  let crashes = 0;
  for (let crashAt = 1; crashAt <= 100 && !completed; crashAt++) {
    const dataPath = tempDir(t, "strata-plant-crash-");
    await seeded(dataPath);
    // Count the durable operations of the open itself, then crash `crashAt` steps into the planting.
    const counting = new CrashingDisk(Infinity);
    const probe = await Partition.open(
      counting,
      new VirtualClock(),
      dataPath,
      address,
      config,
      silentLogger(),
    );
    await probe.close();
    const crashing = new CrashingDisk(counting.durableOps + crashAt);
    const p = await Partition.open(crashing, new VirtualClock(), dataPath, address, config, silentLogger());
    completed = await p.plantRemote(planted, plantedEpochs, source).then(() => true, () => false);
    if (!completed) crashes++;
    await p.close().catch(() => {});

    const dir = partitionDir(dataPath, address);
    const settled = await settlePlantedDir(disk, dir, "1/1/0", silentLogger());
    const again = await Partition.open(disk, new VirtualClock(), dataPath, address, config, silentLogger());
    const end = again.log.nextOffset;
    const starts = again.log.segments.map((s) => s.startOffset);
    const sb = (await readSuperblock(disk, dir))!;
    const whole = [20, 30, 40].includes(end) && settled?.endOffset === end &&
      starts.join() === [0, 10, 20, 30].filter((s) => s < end).concat([end]).join() &&
      again.log.segments.at(-1)!.isEmpty && sb.tieredUpToOffset === end &&
      sb.restoredFrom?.belowOffset === end &&
      again.log.leaderEpochs.starts().every((e) => e.startOffset < end) &&
      plantedEpochs.every((e) =>
        e.startOffset >= end || again.log.leaderEpochs.starts().some((x) => x.epoch === e.epoch)
      );
    if (!whole) {
      t.fail(`crash at step ${crashAt}: end ${end}, chain ${starts}, floor ${sb.tieredUpToOffset}`);
      await again.close();
      break;
    }
    // The follower plants what the crash cut off.
    const missing = planted.filter((m) => m.startOffset >= end);
    if (missing.length > 0) {
      await again.plantRemote(missing, plantedEpochs.filter((e) => e.startOffset >= end), source);
    }
    const final = again.log.leaderEpochs.starts().map((e) => [e.epoch, e.startOffset]);
    const ok = again.log.nextOffset === 40 && again.superblock.tieredUpToOffset === 40 &&
      final.join() === [[1, 0], [3, 20], [4, 30]].join();
    await again.close();
    if (!ok) {
      t.fail(`crash at step ${crashAt}: after planting again, end ${again.log.nextOffset}, epochs ${final}`);
      break;
    }
  }
  t.ok(completed, "some step count lets the planting complete: every earlier one was crashed and checked");
  t.ok(crashes >= 8, `${crashes} plantings crashed at each of their durable steps`);
});
