import { mkdirSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import { FsObjectStore } from "../../../src/objectstore/fs_object_store.ts";
import type { ObjectStore } from "../../../src/objectstore/object_store.ts";
import { readSuperblock, writeSuperblock } from "../../../src/log/partition/superblock.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { readMetadata } from "../../../src/broker/metadata/local_metadata_store.ts";
import { namesPartition } from "../../../src/broker/metadata/metadata.ts";
import { runGc } from "../../../src/tier/housekeeping/gc.ts";
import { parseGcArgs } from "../../../src/tier/housekeeping/gc_args.ts";
import { readIncarnationTable } from "../../../src/tier/bucket/incarnation_table.ts";
import type { ObjectClass } from "../../../src/tier/bucket/object_class.ts";
import { clusterRoot, deadMarkKey, manifestKey, segmentKeys } from "../../../src/tier/bucket/object_keys.ts";
import { configCopy } from "../../helpers/config_copy.ts";
import { openServer } from "../../helpers/open_server.ts";
import { runDenoTask } from "../../helpers/run_task.ts";

const clusterId = "c0ffee";
const disk = new NodeDisk();
const hourAgoS = (Date.now() - 3_600_000) / 1000;

/**
 * A data directory made by the real server (stream s; topic t with 2 partitions, purged once, and
 * a watermark of 300 on partition 0; topic gone, created and deleted; partition 1's superblock
 * damaged) and a bucket seeded with objects of every class, each key listed with its expected class.
 */
async function seeded(t: Test) {
  const server = await openServer(t, { STRATA_SYSTEM_CLUSTER_ID: clusterId });
  const c = server.client();
  await c.createStream("s");
  await c.createTopic("s", { name: "t", partitions: 2 });
  await c.createTopic("s", { name: "gone" });
  await c.deleteTopic("s", "gone");
  await c.purgeTopic("s", "t");
  await server.close();
  const dataPath = join(server.dir, "data");
  const p0 = `${dataPath}/streams/1/topics/1/partitions/0`;
  const sb = (await readSuperblock(disk, p0))!;
  t.equal(sb.purgeGeneration, 1, "the purge bumped the generation");
  await writeSuperblock(disk, p0, { ...sb, deletedUpToOffset: 300 });
  writeFileSync(`${dataPath}/streams/1/topics/1/partitions/1/superblock.bin`, "damaged");

  const rev = sb.createdRevision;
  const inc = (topicId: number, partitionId: number, createdRevision: string, purgeGeneration: number) => ({
    prefix: "strata",
    clusterId,
    streamId: 1,
    topicId,
    partitionId,
    createdRevision,
    purgeGeneration,
  });
  const root = clusterRoot("strata", clusterId);
  const expected = new Map<string, ObjectClass>([
    [segmentKeys(inc(1, 0, rev, 1), 300, null).log, "live"],
    [segmentKeys(inc(1, 0, rev, 1), 300, null).index, "live"],
    [manifestKey(inc(1, 0, rev, 1)), "live"],
    [segmentKeys(inc(1, 1, "0123456789abcdef", 0), 0, null).log, "live"], // partition 1 is unreadable: kept
    [segmentKeys(inc(1, 0, rev, 1), 0, null).log, "below_deleted_watermark"],
    [segmentKeys(inc(1, 0, rev, 1), 0, null).index, "below_deleted_watermark"],
    [segmentKeys(inc(1, 0, rev, 1), 150, null).log, "below_deleted_watermark"],
    [segmentKeys(inc(1, 0, rev, 0), 0, null).log, "stale_generation"], // written before the purge
    [segmentKeys(inc(1, 0, rev, 0), 0, null).index, "stale_generation"],
    [manifestKey(inc(1, 0, rev, 0)), "stale_generation"],
    [segmentKeys(inc(2, 0, "00000000000000aa", 0), 0, null).log, "unknown_incarnation"], // topic gone
    [segmentKeys(inc(1, 0, "00000000000000bb", 0), 0, null).log, "unknown_incarnation"], // a wiped data directory
    [segmentKeys(inc(1, 7, rev, 0), 0, null).log, "unknown_incarnation"], // no such partition
    [segmentKeys(inc(1, 0, rev, 0), 500, null).log, "in_grace"], // stale, but written just now
    [`${root}notes/readme.txt`, "unrecognized"],
  ]);
  const fs = new FsObjectStore(disk, `${dataPath}/objects`, new Rng(3));
  for (const key of expected.keys()) {
    await fs.put(key, async function* () {
      yield new Uint8Array(10);
    }, { sizeBytes: 10, metadata: {}, ifAbsent: false });
    if (expected.get(key) !== "in_grace") {
      utimesSync(`${dataPath}/objects/objects/${key}`, hourAgoS, hourAgoS);
    }
  }
  return { dir: server.dir, dataPath, fs, root, expected, inc, rev };
}

/** A store whose listings come in pages of 4 keys, to exercise paging. */
function smallPages(store: ObjectStore): ObjectStore {
  return {
    put: (...a) => store.put(...a),
    getRange: (...a) => store.getRange(...a),
    streamRange: (...a) => store.streamRange(...a),
    head: (...a) => store.head(...a),
    delete: (...a) => store.delete(...a),
    list: (prefix, options = {}) => store.list(prefix, { ...options, maxKeys: 4 }),
  };
}

async function allKeys(store: ObjectStore, root: string): Promise<string[]> {
  const keys: string[] = [];
  let startAfter: string | undefined;
  for (let i = 0; i < 100; i++) {
    const page = await store.list(root, startAfter === undefined ? {} : { startAfter });
    keys.push(...page.objects.map((o) => o.key));
    if (page.nextStartAfter === null) break;
    startAfter = page.nextStartAfter;
  }
  return keys.sort();
}

t.test("GC classifies a seeded bucket exactly, dry-run deletes nothing, delete removes only the garbage classes", async (t) => {
  const { dataPath, fs, root, expected, inc, rev } = await seeded(t);
  let tableReads = 0;
  const options = {
    store: smallPages(fs),
    root,
    deleteGraceMs: 60_000,
    wallNowMs: () => Date.now(),
    readTable: async (addresses: { streamId: number; topicId: number; partitionId: number }[]) => {
      tableReads++;
      const metadata = (await readMetadata(disk, dataPath))!;
      return readIncarnationTable(disk, dataPath, (a) => namesPartition(metadata, a), addresses);
    },
  };
  const want = (c: ObjectClass) => [...expected.values()].filter((x) => x === c).length;
  const dry = await runGc({ ...options, mode: "dry-run" });
  for (const c of new Set(expected.values())) {
    t.equal(dry.classes[c].objects, want(c), `${c}: ${want(c)} objects`);
  }
  t.equal(dry.listedObjects, expected.size);
  t.equal(dry.deletedObjects, 0);
  t.ok(tableReads >= 4, `the metadata was read after each of the ${tableReads} pages`);
  t.same(await allKeys(fs, root), [...expected.keys()].sort(), "dry-run deleted nothing");

  const run = await runGc({ ...options, mode: "delete" });
  const garbage = ["below_deleted_watermark", "stale_generation", "unknown_incarnation"] as const;
  const staleManifest = manifestKey(inc(1, 0, rev, 0));
  const deadIncarnations = [
    inc(1, 0, rev, 0),
    inc(2, 0, "00000000000000aa", 0),
    inc(1, 0, "00000000000000bb", 0),
    inc(1, 7, rev, 0),
  ];
  t.equal(run.deadMarksPut, 4, "a dead mark for each dead incarnation, before its objects went");
  t.equal(run.deferredObjects, 1, "the stale incarnation's manifest waits: its data was listed in this run");
  t.equal(run.deletedObjects, garbage.reduce((n, c) => n + want(c), 0) - 1);
  t.same(run.deleteFailures, []);
  const kept = [...expected].filter(([, c]) => !(garbage as readonly string[]).includes(c)).map(([k]) => k);
  t.same(
    await allKeys(fs, root),
    [...kept, staleManifest, ...deadIncarnations.map(deadMarkKey)].sort(),
    "live, in_grace and unrecognized objects remain, with the dead marks and the deferred manifest",
  );

  const again = await runGc({ ...options, mode: "delete" });
  t.equal(again.deletedObjects, 0, "a second run finds no garbage it may delete yet");
  t.equal(again.deadMarksPut, 0, "the marks are there");
});

t.test("the GC command: dry-run JSON by default, delete on request, refusals with exit 2", async (t) => {
  const { dir, fs, root, expected } = await seeded(t);
  const config = configCopy(dir, `\n`);
  const env = { STRATA_SYSTEM_CLUSTER_ID: clusterId };
  const gc = (...args: string[]) => runDenoTask("gc", args, env);
  const dry = await gc("--format", "json", "--config", config);
  t.equal(dry.code, 0, dry.err);
  const report = JSON.parse(dry.out);
  t.equal(report.mode, "dry-run");
  t.equal(report.listed_objects, expected.size);
  t.equal(report.classes.unknown_incarnation.objects, 3);
  t.equal(report.classes.in_grace.objects, 1);
  t.match(dry.err, /listed 15 objects/, "progress on stderr");
  t.equal((await allKeys(fs, root)).length, expected.size, "nothing deleted");

  const table = await gc("--config", config, "--mode", "delete");
  t.equal(table.code, 0, table.err);
  t.match(table.out, /stale_generation\s+3\s+30/);
  t.match(table.out, /deleted\s+8\s+80/);
  t.match(table.out, /dead marks put: 4/);
  t.match(table.out, /deferred: 1 manifests and dead marks/);
  t.equal((await allKeys(fs, root)).length, expected.size - 8 + 4);

  const bad = await gc("--mode", "everything");
  t.equal(bad.code, 2);
  t.match(bad.err, /--mode must be one of dry-run, delete/);
  mkdirSync(join(dir, "elsewhere"));
  const empty = configCopy(join(dir, "elsewhere"), "");
  const refused = await gc("--config", empty);
  t.equal(refused.code, 2);
  t.match(refused.err, /Cannot run GC: no metadata under/);
});

t.test("GC arguments: defaults, both spellings, and clear refusals", (t) => {
  t.same(parseGcArgs([]), { mode: "dry-run", format: "table", configPath: "./config.toml", help: false });
  t.same(parseGcArgs(["--mode=delete", "--format", "json", "--config=x.toml"]), {
    mode: "delete",
    format: "json",
    configPath: "x.toml",
    help: false,
  });
  t.throws(() => parseGcArgs(["--format", "xml"]), /--format must be one of table, json, got "xml"/);
  t.throws(() => parseGcArgs(["--config"]), /--config needs a value/);
  t.throws(() => parseGcArgs(["--force"]), /unknown argument "--force"/);
  t.end();
});
