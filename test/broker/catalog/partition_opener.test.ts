import t from "tap";
import { PartitionOpener, sharedCreatedRevision } from "../../../src/broker/catalog/partition_opener.ts";
import {
  defaultTopicOptions,
  segmentSizeBytesMin,
  type TopicOptions,
} from "../../../src/broker/catalog/topic_options.ts";
import type { TopicMeta } from "../../../src/broker/metadata/metadata.ts";
import { loadConfig } from "../../../src/config/load_config.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { silentLogger } from "../../../src/runtime/logger.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { tempDir } from "../../helpers/temp_dir.ts";
import type { PartitionSeed, PartitionSeeder } from "../../../src/log/partition/seeded_partition.ts";

await initCrc32c();

const options: TopicOptions = {
  ...defaultTopicOptions({ tiered: false, localRetentionAgeMs: null, localRetentionSizeBytes: null }, 1),
  segmentSizeBytes: segmentSizeBytesMin,
};
const meta: TopicMeta = { id: 1, name: "orders", createdAtMs: 1_700_000_000_123, options };
const names = { stream: "s", topic: "orders" };
const address = { streamId: 1, topicId: 1, partitionId: 0 };

function opener(path: string, sharedRevisions: boolean, seeder?: PartitionSeeder) {
  const { config } = loadConfig("", "test", { STRATA_SYSTEM_PATH: path });
  return new PartitionOpener({
    disk: new NodeDisk(),
    clock: new VirtualClock(),
    rng: new Rng(9),
    logger: silentLogger(),
    settings: config.system,
    sharedRevisions,
    seeder,
  });
}

/** A seed of two tiered segments, [0, 99] and [100, 149], under the floor 150. */
function seedOf(createdRevision: string): PartitionSeed {
  const marker = (startOffset: number, endOffset: number) => ({
    startOffset,
    endOffset,
    sizeBytes: 1000,
    indexSizeBytes: 12,
    startTimestampUs: 1000,
    endTimestampUs: 2000,
    maxTimestampUs: 2000,
    createdRevision,
    purgeGeneration: 0,
    logCrc32: 7,
    merged: false,
  });
  return {
    createdRevision,
    purgeGeneration: 0,
    tieredUpToOffset: 150,
    markers: [marker(0, 99), marker(100, 149)],
    epochs: [{ epoch: 2, startOffset: 0 }, { epoch: 4, startOffset: 100 }],
  };
}

t.test("the shared revision: 16 hex digits, the same for the same record, another for another", (t) => {
  const revision = sharedCreatedRevision(address, meta);
  t.match(revision, /^[0-9a-f]{16}$/);
  t.equal(sharedCreatedRevision(address, { ...meta }), revision);
  t.not(sharedCreatedRevision({ ...address, partitionId: 1 }, meta), revision);
  t.not(sharedCreatedRevision(address, { ...meta, createdAtMs: meta.createdAtMs + 1 }), revision);
  t.end();
});

t.test("a partition created before revisions were shared takes the shared one, unless it was tiered", async (t) => {
  const path = tempDir(t);
  const old = await opener(path, false).create(address, meta);
  const random = old.superblock.createdRevision;
  t.not(random, sharedCreatedRevision(address, meta), "created with a random revision");
  await old.close();
  const slot = await opener(path, true).openOrCreate(address, meta, names);
  t.equal(slot.kind, "open");
  if (slot.kind !== "open") return;
  t.equal(
    slot.partition.superblock.createdRevision,
    sharedCreatedRevision(address, meta),
    "takes the shared one",
  );
  // Tiered since: its objects carry its revision, which it keeps from now on.
  await slot.partition.log.append([{ key: null, headers: {}, payload: new Uint8Array(10) }]);
  const floor = {
    kind: "advance_tiered_floor" as const,
    partition: "1/1/0",
    purgeGeneration: 0,
    upToOffset: 1,
  };
  t.equal(await slot.partition.applyFloor(floor), "advanced");
  t.equal(
    await slot.partition.adoptCreatedRevision("00000000000000aa"),
    false,
    "a tiered partition keeps its own",
  );
  t.equal(slot.partition.superblock.createdRevision, sharedCreatedRevision(address, meta));
  await slot.partition.close();
  const again = await opener(path, true).openOrCreate(address, meta, names);
  t.equal(
    again.kind === "open" && again.partition.superblock.createdRevision,
    sharedCreatedRevision(address, meta),
  );
  if (again.kind === "open") await again.partition.close();
});

t.test("a new replica of a tiered topic starts from its seed; a failed seeding leaves an empty partition", async (t) => {
  const tieredMeta: TopicMeta = { ...meta, options: { ...options, tiered: true } };
  const asked: string[] = [];
  const seeder: PartitionSeeder = {
    seedFor: (
      _address,
      createdRevision,
    ) => (asked.push(createdRevision), Promise.resolve(seedOf(createdRevision))),
  };
  const seeded = await opener(tempDir(t), true, seeder).openOrCreate(address, tieredMeta, names);
  t.equal(seeded.kind, "open");
  if (seeded.kind !== "open") return;
  t.teardown(() => seeded.partition.close());
  t.same(asked, [sharedCreatedRevision(address, tieredMeta)], "asked under the shared revision");
  t.equal(seeded.partition.log.firstOffset, 0);
  t.equal(seeded.partition.log.nextOffset, 150, "fetches from the floor");
  t.equal(seeded.partition.superblock.tieredUpToOffset, 150);
  t.same(seeded.partition.log.leaderEpochs.starts(), seedOf("").epochs);

  // Not tiered: the seeder is not asked.
  const plain = await opener(tempDir(t), true, seeder).openOrCreate(address, meta, names);
  t.teardown(() => plain.kind === "open" ? plain.partition.close() : undefined);
  t.equal(asked.length, 1, "a topic that is not tiered is never seeded");
  t.equal(plain.kind === "open" ? plain.partition.log.nextOffset : -1, 0);

  // A seeder that fails: the partition is created empty, and copies from its leader.
  const failing: PartitionSeeder = { seedFor: () => Promise.reject(new Error("the bucket is down")) };
  const path = tempDir(t);
  const fallback = await opener(path, true, failing).openOrCreate(address, tieredMeta, names);
  t.equal(fallback.kind, "open");
  if (fallback.kind !== "open") return;
  t.teardown(() => fallback.partition.close());
  t.equal(fallback.partition.log.nextOffset, 0, "empty: it copies everything from its leader");
  t.equal(fallback.partition.superblock.tieredUpToOffset, 0);
});
