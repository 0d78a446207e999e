import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { FormatVersionError } from "../../../src/runtime/format_version_error.ts";
import { LocalMetadataStore, readMetadata } from "../../../src/broker/metadata/local_metadata_store.ts";
import type { Metadata } from "../../../src/broker/metadata/metadata.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { writeRecordFile } from "../../../src/runtime/disk/record_file.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

/** A disk whose renames fail while `failing` is set: a record file's write never completes. */
class FailingRenameDisk extends NodeDisk {
  failing = false;
  override rename(from: string, to: string): Promise<void> {
    if (this.failing) return Promise.reject(new Error("Cannot rename: disk full"));
    return super.rename(from, to);
  }
}

const topicOptions = {
  partitions: 1,
  segmentSizeBytes: 1024 * 1024,
  segmentMaxAgeMs: null,
  retentionMaxAgeMs: null,
  retentionMaxBytes: null,
  tiered: false,
  localRetentionAgeMs: null,
  localRetentionSizeBytes: null,
  retentionConsumerBarrier: false,
};

t.before(() => initCrc32c());

t.test("the first load creates the document with a cluster id and stores it", async (t) => {
  const dir = tempDir(t);
  const disk = new NodeDisk();
  const store = new LocalMetadataStore(disk, dir, new Rng(7), "");
  t.throws(() => store.doc, /not loaded/, "nothing to read before the load");
  const doc = await store.load();
  t.match(doc, { version: 2, nextStreamId: 1, streams: [] });
  t.match(doc.clusterId, /^[0-9a-f]{16}$/);
  t.same(await readMetadata(disk, dir), doc, "written at once");
  t.equal(readFileSync(join(dir, "metadata.bin")).subarray(0, 8).toString("latin1"), "STRAMETA");
  await t.rejects(store.load(), /loaded already/);
  const again = new LocalMetadataStore(disk, dir, new Rng(8), "");
  t.equal((await again.load()).clusterId, doc.clusterId, "a second boot keeps the stored id");
});

t.test("a configured cluster id replaces the stored one; the file takes it with the next commit", async (t) => {
  const dir = tempDir(t);
  const disk = new NodeDisk();
  const first = await new LocalMetadataStore(disk, dir, new Rng(7), "").load();
  const store = new LocalMetadataStore(disk, dir, new Rng(7), "prod-1");
  t.equal((await store.load()).clusterId, "prod-1");
  t.equal((await readMetadata(disk, dir))!.clusterId, first.clusterId, "loading writes nothing");
  await store.commit(() => {});
  t.equal((await readMetadata(disk, dir))!.clusterId, "prod-1");
  t.equal((await new LocalMetadataStore(disk, dir, new Rng(7), "").load()).clusterId, "prod-1");
});

t.test("a file written before an option existed loads with that option's default", async (t) => {
  const dir = tempDir(t);
  const disk = new NodeDisk();
  const { retentionConsumerBarrier: _, ...olderOptions } = topicOptions;
  const stored = {
    version: 2,
    clusterId: "c0ffee",
    nextStreamId: 2,
    streams: [{
      id: 1,
      name: "s",
      createdAtMs: 5,
      nextTopicId: 2,
      topics: [{ id: 1, name: "t", createdAtMs: 6, options: olderOptions }],
    }],
  };
  await writeRecordFile(disk, dir, "metadata.bin", "STRAMETA", stored);
  const doc = await new LocalMetadataStore(disk, dir, new Rng(7), "").load();
  t.equal(doc.streams[0]!.topics[0]!.options.retentionConsumerBarrier, true);
  t.match(doc.streams[0]!.topics[0]!, {
    id: 1,
    name: "t",
    createdAtMs: 6,
    options: { segmentSizeBytes: 1024 * 1024 },
  });
});

t.test("commits are serialized, each on the latest document, and a failed one changes nothing", async (t) => {
  const dir = tempDir(t);
  const disk = new FailingRenameDisk();
  const store = new LocalMetadataStore(disk, dir, new Rng(7), "c0ffee");
  await store.load();
  const add = (name: string) => (doc: Metadata) => {
    doc.streams.push({ id: doc.nextStreamId, name, createdAtMs: 0, nextTopicId: 1, topics: [] });
    doc.nextStreamId++;
  };
  await Promise.all([store.commit(add("a")), store.commit(add("b")), store.commit(add("c"))]);
  t.same(store.doc.streams.map((s) => [s.id, s.name]), [[1, "a"], [2, "b"], [3, "c"]], "no commit lost");
  disk.failing = true;
  await t.rejects(store.commit(add("d")), /disk full/);
  t.equal(store.doc.streams.length, 3, "the failed change is not current");
  disk.failing = false;
  await store.commit(add("e"));
  t.same(store.doc.streams.map((s) => s.name), ["a", "b", "c", "e"]);
  const reloaded = await new LocalMetadataStore(disk, dir, new Rng(7), "").load();
  t.same(reloaded, store.doc, "what was committed is what a reload finds");
});

t.test("a data directory of another format version is refused, naming the version found and expected", async (t) => {
  const dir = tempDir(t);
  const disk = new NodeDisk();
  await writeRecordFile(disk, dir, "metadata.bin", "STRAMETA", {
    version: 1,
    clusterId: "c0ffee",
    nextStreamId: 1,
    streams: [],
  });
  const error = await new LocalMetadataStore(disk, dir, new Rng(7), "").load().catch((e) => e);
  t.ok(error instanceof FormatVersionError, "a FormatVersionError");
  t.equal(
    error.message,
    `Cannot read the data directory ${dir}: it is in format version 1, this server reads format version 2 (docs/FORMAT.md, "Format versions")`,
  );
  t.equal((await readMetadata(disk, dir))!.version, 1, "nothing was rewritten");
});
