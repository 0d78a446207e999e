import t from "tap";
import type { LogConfig } from "../../src/log/log_config.ts";
import { Partition, partitionDir } from "../../src/log/partition.ts";
import type { RemoteMarker } from "../../src/log/remote_marker.ts";
import { settlePlantedDir } from "../../src/log/remote_planting.ts";
import { writeSeededPartition } from "../../src/log/seeded_partition.ts";
import { readSuperblock } from "../../src/log/superblock.ts";
import { initCrc32c } from "../../src/runtime/crc32c.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { NodeDisk } from "../../src/runtime/node_disk.ts";
import { VirtualClock } from "../../src/runtime/virtual_clock.ts";
import { CrashingDisk } from "../helpers/crashing_disk.ts";
import { tempDir } from "../helpers/temp_dir.ts";

// A read replica's planting crashed at every durable step in turn: at the next boot the directory
// settles into a whole chain whose floor, source watermark and epochs agree with its markers, and
// planting what is missing then brings it to where an uncrashed planting would have.
await initCrc32c();
const disk = new NodeDisk();
const config: LogConfig = {
  segmentSizeBytes: 1024 * 1024,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 4096,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 100,
};
const address = { streamId: 1, topicId: 1, partitionId: 0 };
const source = {
  clusterId: "src",
  streamId: 4,
  topicId: 9,
  partitionId: 0,
  createdRevision: "00000000000000aa",
  purgeGeneration: 0,
};
const marker = (start: number): RemoteMarker => ({
  startOffset: start,
  endOffset: start + 9,
  sizeBytes: 1000,
  indexSizeBytes: 8,
  startTimestampUs: start,
  endTimestampUs: start + 9,
  maxTimestampUs: start + 9,
  createdRevision: source.createdRevision,
  purgeGeneration: 0,
  logCrc32: 5,
});
/** Each planted segment starts a new leader epoch: 3 at 20, 4 at 30. */
const planted = [marker(20), marker(30)];
const plantedEpochs = [{ epoch: 3, startOffset: 20 }, { epoch: 4, startOffset: 30 }];

async function seeded(dataPath: string): Promise<void> {
  await writeSeededPartition(disk, partitionDir(dataPath, address), {
    createdRevision: source.createdRevision,
    purgeGeneration: 0,
    tieredUpToOffset: 20,
    markers: [marker(0), marker(10)],
    epochs: [{ epoch: 1, startOffset: 0 }],
    restoredFrom: { ...source, belowOffset: 20 },
  });
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
    const settled = await settlePlantedDir(disk, dir, "1/1/0");
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
