import t from "tap";
import {
  classifyObject,
  type IncarnationTable,
  type KnownPartition,
} from "../../../src/tier/bucket/object_class.ts";
import {
  afterIncarnation,
  clusterRoot,
  deadMarkKey,
  incarnationIdOf,
  incarnationOfKey,
  incarnationPrefix,
  manifestKey,
  parseObjectKey,
  segmentKeys,
  segmentKeysOfLog,
  topicManifestKey,
} from "../../../src/tier/bucket/object_keys.ts";

const root = clusterRoot("strata", "c1");
const inc = (partitionId: number, createdRevision: string, purgeGeneration: number) => ({
  prefix: "strata",
  clusterId: "c1",
  streamId: 1,
  topicId: 2,
  partitionId,
  createdRevision,
  purgeGeneration,
});

t.test("keys written by the layout parse back to their incarnation and offset; anything else is unrecognized", (t) => {
  const keys = segmentKeys(inc(3, "00ab", 4), 1234, null);
  t.match(parseObjectKey(root, keys.log), {
    kind: "segment",
    address: { streamId: 1, topicId: 2, partitionId: 3 },
    createdRevision: "00ab",
    purgeGeneration: 4,
    startOffset: 1234,
    file: "log",
    incarnationPrefix: incarnationPrefix(inc(3, "00ab", 4)),
  });
  t.match(parseObjectKey(root, keys.index), { kind: "segment", file: "index" });
  t.match(parseObjectKey(root, keys.producers), { kind: "segment", startOffset: 1234, file: "producers" });
  t.match(parseObjectKey(root, keys.txnindex), { kind: "segment", startOffset: 1234, file: "txnindex" });
  t.same(segmentKeysOfLog(keys.log), keys, "a segment's keys from its .log object's");
  t.match(parseObjectKey(root, manifestKey(inc(3, "00ab", 4))), { kind: "manifest", purgeGeneration: 4 });
  t.match(parseObjectKey(root, deadMarkKey(inc(3, "00ab", 4))), {
    kind: "dead_mark",
    address: { streamId: 1, topicId: 2, partitionId: 3 },
    createdRevision: "00ab",
    purgeGeneration: 4,
  });
  t.same(parseObjectKey(root, topicManifestKey("strata", "c1", 1, 2)), {
    kind: "topic_manifest",
    address: { streamId: 1, topicId: 2, partitionId: 0 },
    incarnationPrefix: `${root}meta/1/2/topic.bin`,
  });
  t.equal(topicManifestKey("strata", "c1", 1, 2), `${root}meta/1/2/topic.bin`);
  t.equal(deadMarkKey(inc(3, "00ab", 4)), `${root}meta/1/2/3/00ab-4/dead`);
  t.equal(
    incarnationIdOf(parseObjectKey(root, deadMarkKey(inc(3, "00ab", 4))) as never),
    incarnationIdOf(parseObjectKey(root, keys.log) as never),
    "a dead mark and a segment of one incarnation name it alike",
  );
  t.same(incarnationOfKey(root, parseObjectKey(root, keys.log) as never), inc(3, "00ab", 4));
  for (
    const odd of [
      "strata/c2/1/2/3/00ab-4/00000000000000001234.log",
      `${root}1/2/3/00ab-4/1234.log`,
      `${root}1/2/3/00ab-4/00000000000000001234.tmp`,
      `${root}1/2/3/00ab-4/00000000000000001234.producers.tmp`,
      `${root}1/2/3/XYZ-4/00000000000000001234.log`,
      `${root}1/2/03/00ab-4/00000000000000001234.log`,
      `${root}1/2/3/00ab-4/extra/00000000000000001234.log`,
      `${root}meta/1/2/3/00ab-4/other.bin`,
      `${root}meta/1/02/topic.bin`,
      `${root}meta/1/2/topic.json`,
      `${root}meta/1/topic.bin`,
      `${root}probe/x`,
    ]
  ) {
    t.same(parseObjectKey(root, odd), { kind: "unrecognized" }, odd);
  }
  t.ok(
    afterIncarnation(incarnationPrefix(inc(3, "00ab", 4))) > keys.log,
    "skip key sorts after the segments",
  );
  t.ok(afterIncarnation(incarnationPrefix(inc(3, "00ab", 4))) < segmentKeys(inc(3, "00ab", 5), 0, null).log);
  t.end();
});

t.test("each class: live, below the watermark, stale generation, unknown incarnation, in grace, unreadable kept", (t) => {
  const table: IncarnationTable = new Map<string, KnownPartition>([
    ["1/2/0", { createdRevision: "aa", purgeGeneration: 2, deletedUpToOffset: 100 }],
    ["1/2/1", "unreadable" as const],
  ]);
  const now = 1_000_000;
  const old = now - 61_000;
  const classOf = (key: string, modified = old) =>
    classifyObject(parseObjectKey(root, key), modified, table, now, 60_000);
  t.equal(classOf(segmentKeys(inc(0, "aa", 2), 100, null).log), "live", "the segment at the watermark stays");
  t.equal(classOf(segmentKeys(inc(0, "aa", 2), 50, null).log), "below_deleted_watermark");
  t.equal(classOf(segmentKeys(inc(0, "aa", 2), 50, null).index), "below_deleted_watermark");
  t.equal(classOf(segmentKeys(inc(0, "aa", 1), 500, null).log), "stale_generation");
  t.equal(classOf(manifestKey(inc(0, "aa", 1))), "stale_generation");
  t.equal(classOf(manifestKey(inc(0, "aa", 2))), "live");
  t.equal(
    classOf(segmentKeys(inc(0, "aa", 3), 0, null).log),
    "live",
    "a generation newer than the table is kept",
  );
  t.equal(
    classOf(segmentKeys(inc(0, "bb", 2), 500, null).log),
    "unknown_incarnation",
    "a wiped and recreated partition",
  );
  t.equal(
    classOf(segmentKeys(inc(7, "aa", 0), 0, null).log),
    "unknown_incarnation",
    "a partition that does not exist",
  );
  t.equal(
    classOf(segmentKeys(inc(1, "cc", 0), 0, null).log),
    "live",
    "an unreadable partition keeps everything",
  );
  t.equal(classOf(segmentKeys(inc(0, "aa", 1), 500, null).log, now - 59_000), "in_grace");
  t.equal(classOf(segmentKeys(inc(0, "aa", 2), 0, null).log, now - 1), "in_grace");
  t.equal(
    classOf(segmentKeys(inc(0, "aa", 2), 0, null).log, Number.POSITIVE_INFINITY),
    "in_grace",
    "no LastModified",
  );
  t.equal(classOf(`${root}notes.txt`), "unrecognized");
  t.equal(
    classOf(topicManifestKey("strata", "c1", 1, 2)),
    "live",
    "a topic manifest, while its topic exists",
  );
  t.equal(classOf(topicManifestKey("strata", "c1", 1, 9)), "unknown_incarnation", "a deleted topic's");
  t.equal(
    classOf(deadMarkKey(inc(0, "aa", 1))),
    "stale_generation",
    "a dead mark goes as its incarnation's objects do",
  );
  t.end();
});

t.test("a merged segment's keys carry its start and end offsets, and parse back to both", (t) => {
  const keys = segmentKeys(inc(3, "00ab", 4), 1234, 5678);
  t.equal(keys.log, `${incarnationPrefix(inc(3, "00ab", 4))}00000000000000001234-00000000000000005678.log`);
  t.match(parseObjectKey(root, keys.log), {
    kind: "segment",
    startOffset: 1234,
    mergedEndOffset: 5678,
    file: "log",
  });
  t.match(parseObjectKey(root, keys.index), { kind: "segment", startOffset: 1234, mergedEndOffset: 5678 });
  t.match(parseObjectKey(root, segmentKeys(inc(3, "00ab", 4), 1234, null).log), { mergedEndOffset: null });
  const prefix = incarnationPrefix(inc(3, "00ab", 4));
  for (const bad of ["00000000000000001234-00000000000000001234.log", "00000000000000001234-5678.log"]) {
    t.same(parseObjectKey(root, `${prefix}${bad}`), { kind: "unrecognized" }, bad);
  }
  t.end();
});

t.test("a merge's object is below the watermark only once the watermark passes its end", (t) => {
  const table: IncarnationTable = new Map<string, KnownPartition>([
    ["1/2/3", { createdRevision: "00ab", purgeGeneration: 4, deletedUpToOffset: 100 }],
  ]);
  const at = (start: number, end: number | null) =>
    classifyObject(
      parseObjectKey(root, segmentKeys(inc(3, "00ab", 4), start, end).log),
      0,
      table,
      1_000_000,
      60_000,
    );
  t.equal(at(50, null), "below_deleted_watermark");
  t.equal(at(50, 99), "below_deleted_watermark");
  t.equal(at(50, 149), "live", "it holds offsets retention kept");
  t.end();
});
