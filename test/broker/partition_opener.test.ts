import t from "tap";
import { PartitionOpener, sharedCreatedRevision } from "../../src/broker/partition_opener.ts";
import {
  defaultTopicOptions,
  segmentSizeBytesMin,
  type TopicOptions,
} from "../../src/broker/topic_options.ts";
import type { TopicMeta } from "../../src/broker/metadata.ts";
import { loadConfig } from "../../src/config/load_config.ts";
import { initCrc32c } from "../../src/runtime/crc32c.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { NodeDisk } from "../../src/runtime/node_disk.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { VirtualClock } from "../../src/runtime/virtual_clock.ts";
import { tempDir } from "../helpers/temp_dir.ts";

await initCrc32c();

const options: TopicOptions = {
  ...defaultTopicOptions({ tiered: false, localRetentionAgeMs: null, localRetentionSizeBytes: null }, 1),
  segmentSizeBytes: segmentSizeBytesMin,
};
const meta: TopicMeta = { id: 1, name: "orders", createdAtMs: 1_700_000_000_123, options };
const names = { stream: "s", topic: "orders" };
const address = { streamId: 1, topicId: 1, partitionId: 0 };

function opener(path: string, sharedRevisions: boolean) {
  const { config } = loadConfig("", "test", { STRATA_SYSTEM_PATH: path });
  return new PartitionOpener({
    disk: new NodeDisk(),
    clock: new VirtualClock(),
    rng: new Rng(9),
    logger: silentLogger(),
    settings: config.system,
    sharedRevisions,
  });
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
