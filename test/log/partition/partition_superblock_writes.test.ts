import t from "tap";
import type { LogConfig } from "../../../src/log/log_config.ts";
import { Partition } from "../../../src/log/partition/partition.ts";
import { readSuperblock, superblockFileName } from "../../../src/log/partition/superblock.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

// The floor and the retention watermark both live in the superblock, written whole by tasks that
// run concurrently (a floor command applied from the control log, a retention pass from the tick).
// Neither may lose the other's change, nor fail on the other's temporary file.
await initCrc32c();
const config: LogConfig = {
  segmentSizeBytes: 1000,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 4096,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 100,
};
const address = { streamId: 1, topicId: 1, partitionId: 0 };

/** A real disk whose next rename onto a superblock waits until `release` is called. */
class HeldRenameDisk extends NodeDisk {
  #held: { reached: () => void; released: Promise<void> } | null = null;

  holdNextSuperblockRename(): { reached: Promise<void>; release: () => void } {
    let reached = () => {};
    let release = () => {};
    const reachedPromise = new Promise<void>((r) => (reached = r));
    const released = new Promise<void>((r) => (release = r));
    this.#held = { reached, released };
    return { reached: reachedPromise, release };
  }

  override async rename(fromPath: string, toPath: string): Promise<void> {
    const held = this.#held;
    if (held !== null && toPath.endsWith(`/${superblockFileName}`)) {
      this.#held = null;
      held.reached();
      await held.released;
    }
    return await super.rename(fromPath, toPath);
  }
}

t.test("a floor applied while a retention pass writes its watermark: both reach the superblock", async (t) => {
  const disk = new HeldRenameDisk();
  const p = await Partition.create(disk, new VirtualClock(), new Rng(1), tempDir(t), address, config);
  t.teardown(() => p.close());
  for (let i = 0; i < 12; i++) await p.log.append([{ key: null, headers: {}, payload: new Uint8Array(400) }]);
  const sealed = p.log.segments.filter((s) => s.sealed);
  t.ok(sealed.length >= 3, `${sealed.length} sealed segments`);
  const hold = disk.holdNextSuperblockRename();
  // Retention deletes the first sealed segment and stops just before its superblock takes its place.
  const retention = p.enforceRetention((segment) => segment.startOffset === sealed[0]!.startOffset);
  await hold.reached;
  const floor = p.applyFloor({
    kind: "advance_tiered_floor",
    partition: "1/1/0",
    purgeGeneration: 0,
    upToOffset: sealed[1]!.endOffset + 1,
  });
  hold.release();
  t.same(await Promise.all([retention, floor]), [1, "advanced"], "both succeed");
  const expected = { tieredUpToOffset: sealed[1]!.endOffset + 1, deletedUpToOffset: sealed[1]!.startOffset };
  t.match(p.superblock, expected, "in memory");
  t.match(await readSuperblock(disk, p.dir), expected, "on disk");
});
