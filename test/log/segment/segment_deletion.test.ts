import { existsSync, readdirSync } from "node:fs";
import t from "tap";
import { deleteFront, purgeSegments } from "../../../src/log/segment/segment_deletion.ts";
import { segmentStem } from "../../../src/log/segment/segment.ts";
import { filledChain } from "../../helpers/chain_fixture.ts";
import { RecordingDisk } from "../../helpers/disks/recording_disk.ts";

const stem = segmentStem;

t.test("retention deletes the front oldest first, each segment's files, then one directory fsync", async (t) => {
  const disk = new RecordingDisk();
  const { chain, dir } = await filledChain(t, 14, disk);
  // The oldest is tiered: only its marker and index are local.
  const front = chain.segments[0]!;
  front.location = "remote";
  front.marker = { startOffset: 0 } as never;
  disk.ops.length = 0;
  const deleted = await deleteFront(disk, dir, chain, (s) => s.endOffset < 8);
  t.equal(deleted, 2);
  t.same(disk.ops, [
    `unlink ${stem(0)}.index`,
    `unlink ${stem(0)}.remote`,
    `unlink ${stem(4)}.log`,
    `unlink ${stem(4)}.index`,
    "fsync dir",
  ], "a remote segment has no .log to unlink; a missing marker is no error");
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

t.test("a purge deletes every segment oldest first, then starts again at offset 0", async (t) => {
  const disk = new RecordingDisk();
  const { chain, dir } = await filledChain(t, 10, disk);
  disk.ops.length = 0;
  await purgeSegments(disk, dir, chain);
  t.same(disk.ops, [
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
