import { existsSync, writeFileSync } from "node:fs";
import t from "tap";
import type { LogConfig } from "../../src/log/log_config.ts";
import { Partition } from "../../src/log/partition/partition.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import type { Disk } from "../../src/runtime/disk/disk.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { RecordingDisk } from "../helpers/disks/recording_disk.ts";
import { tempDir } from "../helpers/temp_dir.ts";

// Boot rebuilds the active segment's index from its log, so an intact partition's boot writes
// nothing: at ten thousand partitions, one write and fsync each was a good part of the boot.
await initCrc32c();
const config: LogConfig = {
  segmentSizeBytes: 64 * 1024,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 4096,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 100,
};
const address = { streamId: 1, topicId: 1, partitionId: 0 };
/** Opens the partition in `data` again, on `disk`. */
const reopen = (disk: Disk, data: string) =>
  Partition.open(disk, new VirtualClock(), data, address, config, silentLogger());
const message = (i: number) => [{ key: null, headers: {}, payload: new Uint8Array(3000).fill(i) }];

t.test("the boot of an intact partition writes nothing; its active index is still right at the seal", async (t) => {
  const data = tempDir(t);
  const p = await Partition.create(new NodeDisk(), new VirtualClock(), new Rng(1), data, address, config);
  for (let i = 0; i < 12; i++) await p.log.append(message(i));
  await p.close();
  const disk = new RecordingDisk();
  const reopened = await reopen(disk, data);
  t.same(disk.ops, [], "no file written, created, synced or removed");
  // Enough more to seal the active segment: its index, written at the seal, covers the whole log.
  for (let i = 12; i < 40; i++) await reopened.log.append(message(i));
  await reopened.close();
  const again = await reopen(new NodeDisk(), data);
  t.teardown(() => again.close());
  const sealed = again.log.segments.find((s) => s.sealed)!;
  t.ok(sealed.localIndex.length > 1, "the sealed segment's index, written at its seal, has its entries");
  const read = await again.log.read(0, 40, 1 << 20);
  t.same(
    read.messages.map((m) => m.payload![0]),
    Array.from({ length: 40 }, (_, i) => i),
    "every message reads",
  );
});

t.test("an active segment has no index file until its seal; one left from an older layout is replaced there", async (t) => {
  const data = tempDir(t);
  const p = await Partition.create(new NodeDisk(), new VirtualClock(), new Rng(1), data, address, config);
  await p.log.append(message(1));
  const indexPath = p.log.segments.at(-1)!.indexPath;
  t.equal(existsSync(indexPath), false, "none at creation");
  await p.close();
  t.equal(existsSync(indexPath), false, "none after a clean close: boot rebuilds the index");
  // An index file from a layout that kept one for the active segment: stale bytes, never read.
  writeFileSync(indexPath, new Uint8Array(24).fill(0xee));
  const reopened = await reopen(new NodeDisk(), data);
  for (let i = 2; i < 40; i++) await reopened.log.append(message(i));
  await reopened.close();
  const disk = new RecordingDisk();
  const sealed = await reopen(disk, data);
  t.teardown(() => sealed.close());
  const first = sealed.log.segments[0]!;
  t.ok(first.sealed && first.localIndex.length > 1, "the seal wrote the index whole");
  t.same(disk.ops, [], "and boot found it consistent: no index rebuilt over the stale bytes");
  t.equal((await sealed.log.read(0, 1, 1 << 20)).messages[0]!.payload![0], 1);
});

/** A NodeDisk that records the paths it is asked to stat. */
class StatRecordingDisk extends NodeDisk {
  readonly stats: string[] = [];
  override stat(path: string) {
    this.stats.push(path);
    return super.stat(path);
  }
}

t.test("boot reads stored consumer offsets, and does not look for them where the listing found none", async (t) => {
  const data = tempDir(t);
  const p = await Partition.create(new NodeDisk(), new VirtualClock(), new Rng(1), data, address, config);
  await p.log.append(message(1));
  await p.close();
  const quiet = new StatRecordingDisk();
  const first = await reopen(quiet, data);
  t.notOk(
    quiet.stats.some((path) => path.endsWith("consumer_offsets.bin")),
    "no stat of an unlisted offsets file",
  );
  await first.offsets.set("reader", 1);
  await first.close();
  const again = await reopen(new StatRecordingDisk(), data);
  t.teardown(() => again.close());
  t.equal(again.offsets.get("reader"), 1, "a stored offset is read back");
});

/** A NodeDisk that records the files it is asked to open or to read whole. */
class OpenRecordingDisk extends NodeDisk {
  readonly opened: string[] = [];
  override open(path: string, options?: Parameters<NodeDisk["open"]>[1]) {
    this.opened.push(path.slice(path.lastIndexOf("/") + 1));
    return super.open(path, options);
  }
  override readSmallFile(path: string, maxBytes: number) {
    this.opened.push(path.slice(path.lastIndexOf("/") + 1));
    return super.readSmallFile(path, maxBytes);
  }
}

t.test("boot opens the leader epochs only where the listing has them, and reads them back there", async (t) => {
  const data = tempDir(t);
  const p = await Partition.create(new NodeDisk(), new VirtualClock(), new Rng(1), data, address, config);
  await p.log.append(message(1));
  await p.close();
  const quiet = new OpenRecordingDisk();
  const first = await reopen(quiet, data);
  t.notOk(quiet.opened.includes("leader-epochs.bin"), `no open of an unlisted epochs file (${quiet.opened})`);
  t.equal(first.log.leaderEpochs.latestEpoch, -1);
  first.log.leaderEpochs.assign(3, 0);
  await first.log.leaderEpochs.persist();
  await first.close();
  const listed = new OpenRecordingDisk();
  const again = await reopen(listed, data);
  t.teardown(() => again.close());
  t.ok(listed.opened.includes("leader-epochs.bin"), "a listed epochs file is opened");
  t.equal(again.log.leaderEpochs.latestEpoch, 3, "and its epochs are read back");
});
