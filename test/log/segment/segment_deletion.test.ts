import { existsSync, readdirSync } from "node:fs";
import t from "tap";
import { deleteFront, purgeSegments } from "../../../src/log/segment/segment_deletion.ts";
import { segmentStem } from "../../../src/log/segment/segment.ts";
import { evictSegments } from "../../../src/log/segment/segment_eviction.ts";
import { readRemoteTable, remoteTableName } from "../../../src/log/remote/remote_table.ts";
import { filledChain } from "../../helpers/chain_fixture.ts";
import { RecordingDisk } from "../../helpers/disks/recording_disk.ts";

const stem = segmentStem;
const identity = { createdRevision: "00000000000000aa", purgeGeneration: 0 };

t.test("retention deletes the front oldest first, each segment's files, then one directory fsync", async (t) => {
  const disk = new RecordingDisk();
  const { chain, dir } = await filledChain(t, 14, disk);
  // The oldest is tiered: only its index is local, and its marker is in the remote table.
  await evictSegments(disk, dir, chain.segments, chain.remoteTable, new Map([[0, 1]]), 4, identity);
  disk.ops.length = 0;
  const deleted = await deleteFront(disk, dir, chain, (s) => s.endOffset < 8);
  t.equal(deleted, 2);
  t.same(disk.ops, [
    `open+create ${remoteTableName}`,
    `write ${remoteTableName}`,
    `fsync ${remoteTableName}`,
    `unlink ${stem(0)}.index`,
    `unlink ${stem(4)}.log`,
    `unlink ${stem(4)}.index`,
    "fsync dir",
  ], "the table forgets the remote segment first; a remote segment has no .log to unlink");
  const table = await readRemoteTable(disk, dir);
  t.same(table?.markers(), [], "the table holds no live marker");
  t.equal(table?.records, 2, "its marker and the forget record");
  t.same(chain.segments.map((s) => s.startOffset), [8, 12]);
  t.notOk(existsSync(`${dir}/${stem(4)}.log`));
});

t.test("nothing to delete: no unlink, no fsync", async (t) => {
  const disk = new RecordingDisk();
  const { chain, dir } = await filledChain(t, 10, disk);
  disk.ops.length = 0;
  t.equal(await deleteFront(disk, dir, chain, () => false), 0);
  t.same(disk.ops, []);
});

t.test("a purge deletes the producer snapshots, then every segment oldest first, then starts again at offset 0", async (t) => {
  const disk = new RecordingDisk();
  const { chain, dir } = await filledChain(t, 10, disk);
  disk.ops.length = 0;
  await purgeSegments(disk, dir, chain);
  t.same(disk.ops, [
    `unlink ${stem(4)}.producers`,
    `unlink ${stem(8)}.producers`,
    "fsync dir",
    `unlink ${stem(0)}.log`,
    `unlink ${stem(0)}.index`,
    `unlink ${stem(4)}.log`,
    `unlink ${stem(4)}.index`,
    `unlink ${stem(8)}.log`,
    `unlink ${stem(8)}.index`,
    "fsync dir",
    `create ${stem(0)}.log`,
    "fsync dir",
  ]);
  t.same(chain.stats().segments.map((s) => [s.startOffset, s.sizeBytes]), [[0, 0]]);
  t.same(readdirSync(dir).sort(), [`${stem(0)}.log`], "the new active segment has no index file");
});
