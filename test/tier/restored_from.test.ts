import t from "tap";
import { referencedIncarnations } from "../../src/broker/metadata/metadata.ts";
import type { LogConfig } from "../../src/log/log_config.ts";
import { Partition, partitionDir } from "../../src/log/partition/partition.ts";
import { encodeRemoteMarker } from "../../src/log/remote/remote_marker.ts";
import { writeSeededPartition } from "../../src/log/partition/seeded_partition.ts";
import { readSuperblock, type RestoredFrom } from "../../src/log/partition/superblock.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { classifyObject } from "../../src/tier/bucket/object_class.ts";
import {
  clusterRoot,
  incarnationOf,
  objectIncarnation,
  parseObjectKey,
  segmentKeys,
} from "../../src/tier/bucket/object_keys.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { tempDir } from "../helpers/temp_dir.ts";

// A restored partition reads its oldest segments from the objects of the incarnation the restore
// took, under that incarnation's keys; GC keeps those objects while a restored topic names them.
await initCrc32c();
const config: LogConfig = {
  segmentSizeBytes: 1000,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 4096,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 100,
};
const source: RestoredFrom = {
  clusterId: "old",
  streamId: 4,
  topicId: 9,
  partitionId: 2,
  createdRevision: "00000000000000aa",
  purgeGeneration: 3,
  belowOffset: 20,
};
const marker = (start: number, end: number) => ({
  startOffset: start,
  endOffset: end,
  sizeBytes: 100,
  indexSizeBytes: 8,
  startTimestampUs: 1,
  endTimestampUs: 2,
  maxTimestampUs: 2,
  createdRevision: source.createdRevision,
  purgeGeneration: source.purgeGeneration,
  logCrc32: 5,
  merged: false,
});

t.test("segments below the restore's offset keep its source's keys; later ones are the partition's own", (t) => {
  const own = {
    prefix: "strata",
    clusterId: "new",
    streamId: 1,
    topicId: 1,
    partitionId: 0,
    createdRevision: "aa",
    purgeGeneration: 3,
  };
  t.same(objectIncarnation(own, source, 10), {
    prefix: "strata",
    clusterId: "old",
    streamId: 4,
    topicId: 9,
    partitionId: 2,
    createdRevision: source.createdRevision,
    purgeGeneration: 3,
  });
  t.equal(
    segmentKeys(objectIncarnation(own, source, 10), 10, null).log,
    "strata/old/4/9/2/00000000000000aa-3/00000000000000000010.log",
  );
  t.same(objectIncarnation(own, source, 20), own, "at the offset: the partition's own");
  t.same(objectIncarnation(own, null, 0), own, "not restored");
  t.end();
});

t.test("a seeded partition keeps where it was restored from across a reopen; a purge drops it", async (t) => {
  const disk = new NodeDisk();
  const data = tempDir(t);
  const address = { streamId: 1, topicId: 1, partitionId: 0 };
  const dir = partitionDir(data, address);
  t.ok(encodeRemoteMarker(marker(0, 9)).length > 0);
  await writeSeededPartition(disk, dir, {
    createdRevision: source.createdRevision,
    purgeGeneration: source.purgeGeneration,
    tieredUpToOffset: 20,
    markers: [marker(0, 9), marker(10, 19)],
    epochs: [],
    restoredFrom: source,
  });
  const p = await Partition.open(disk, new VirtualClock(), data, address, config, silentLogger());
  t.same(p.superblock.restoredFrom, source);
  t.equal(
    p.log.segments.filter((s) => s.location === "remote").length,
    2,
    "two segments, both in the bucket",
  );
  t.equal(p.log.nextOffset, 20, "producing goes on at the restore's next offset");
  const own = incarnationOf("strata", "new", p);
  t.equal(
    segmentKeys(objectIncarnation(own, p.superblock.restoredFrom, 0), 0, null).log,
    "strata/old/4/9/2/00000000000000aa-3/00000000000000000000.log",
  );
  await p.purge();
  t.equal(p.superblock.restoredFrom, null, "a purge deletes every segment, the restored ones with them");
  t.equal((await readSuperblock(disk, dir))!.restoredFrom, null, "durably");
  await p.close();
});

t.test("GC keeps a restored topic's source incarnation of this cluster, whatever its own partition became", (t) => {
  const doc = {
    version: 2,
    clusterId: "old",
    nextStreamId: 5,
    streams: [{
      id: 4,
      name: "s",
      createdAtMs: 0,
      nextTopicId: 11,
      topics: [{
        id: 10,
        name: "t-restored",
        createdAtMs: 0,
        options: {} as never,
        restoredFrom: {
          clusterId: "old",
          streamId: 4,
          topicId: 9,
          incarnations: [{ partitionId: 2, createdRevision: source.createdRevision, purgeGeneration: 3 }],
        },
      }],
    }],
  };
  const referenced = referencedIncarnations(doc);
  t.same([...referenced], [`4/9/2@${source.createdRevision}-3`]);
  t.same(
    [...referencedIncarnations({ ...doc, clusterId: "other" })],
    [],
    "another cluster's objects are not ours to keep",
  );
  const root = clusterRoot("strata", "old");
  const key = parseObjectKey(root, segmentKeys({ prefix: "strata", ...source }, 0, null).log);
  const hourAgo = Date.now() - 3_600_000;
  t.equal(
    classifyObject(key, hourAgo, new Map(), Date.now(), 60_000),
    "unknown_incarnation",
    "topic 9 is gone",
  );
  const table = Object.assign(new Map(), { referenced });
  t.equal(
    classifyObject(key, hourAgo, table, Date.now(), 60_000),
    "live",
    "but its objects are read by topic 10",
  );
  const purged = parseObjectKey(
    root,
    segmentKeys({ prefix: "strata", ...source, purgeGeneration: 2 }, 0, null).log,
  );
  t.equal(
    classifyObject(purged, hourAgo, table, Date.now(), 60_000),
    "unknown_incarnation",
    "not another generation",
  );
  t.end();
});
