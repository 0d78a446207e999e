import { readFileSync, writeFileSync } from "node:fs";
import t from "tap";
import type { LogConfig } from "../../../src/log/log_config.ts";
import { PartitionRefusedError } from "../../../src/log/log_errors.ts";
import { Partition } from "../../../src/log/partition/partition.ts";
import { superblockFileName } from "../../../src/log/partition/superblock.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { silentLogger } from "../../../src/runtime/logger.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

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

t.test("a superblock that fails its checksum refuses the partition, with the read's error as its cause", async (t) => {
  const disk = new NodeDisk();
  const data = tempDir(t);
  const p = await Partition.create(disk, new VirtualClock(), new Rng(1), data, address, config);
  await p.close();
  const path = `${p.dir}/${superblockFileName}`;
  const bytes = readFileSync(path);
  bytes[bytes.length - 1]! ^= 0xff;
  writeFileSync(path, bytes);

  const refused = await Partition.open(disk, new VirtualClock(), data, address, config, silentLogger())
    .catch((error: unknown) => error);
  t.ok(refused instanceof PartitionRefusedError, "refused");
  const { message, cause } = refused as PartitionRefusedError;
  t.ok(cause instanceof Error, "the read's error is kept");
  const read = cause as Error | undefined;
  t.equal(read?.name, "CorruptRecordError", "the checksum failure itself");
  t.equal(message, `Cannot open partition 1/1/0: ${read?.message}`, "the message is the cause's, labelled");
  t.match(message, /superblock\.bin/, "naming the file");
});
