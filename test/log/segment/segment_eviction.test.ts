import { existsSync, readFileSync } from "node:fs";
import t from "tap";
import { decodeRemoteMarker, remoteMarkerBytes } from "../../../src/log/remote/remote_marker.ts";
import { remoteTableName } from "../../../src/log/remote/remote_table.ts";
import { segmentStem } from "../../../src/log/segment/segment.ts";
import { evictSegments, hashLog } from "../../../src/log/segment/segment_eviction.ts";
import { crc32 } from "../../../src/runtime/checksum/crc32.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { filledChain } from "../../helpers/chain_fixture.ts";
import { RecordingDisk } from "../../helpers/disks/recording_disk.ts";

const identity = { createdRevision: "00000000000000aa", purgeGeneration: 3 };
const stem = segmentStem;

t.test("the victims' markers appended to the remote table and fsynced, then their .logs unlinked, then the directory fsynced", async (t) => {
  const disk = new RecordingDisk();
  const { chain, dir } = await filledChain(t, 11, disk);
  disk.ops.length = 0;
  const victims = new Map([[0, 11], [4, 22]]);
  const evicted = await evictSegments(disk, dir, chain.segments, chain.remoteTable, victims, 8, identity);
  t.equal(evicted, 2);
  t.same(disk.ops, [
    `open+create ${remoteTableName}`,
    `write ${remoteTableName}`,
    `fsync ${remoteTableName}`,
    "fsync dir",
    `unlink ${stem(0)}.log`,
    `unlink ${stem(4)}.log`,
    "fsync dir",
  ]);
  t.same(chain.segments.map((s) => s.location), ["remote", "remote", "local"]);
  t.ok(existsSync(`${dir}/${stem(0)}.index`), "the .index stays");
  const table = readFileSync(`${dir}/${remoteTableName}`);
  t.equal(table.length, 2 * remoteMarkerBytes, "one record a victim");
  const marker = decodeRemoteMarker(table.subarray(remoteMarkerBytes));
  t.match(marker, {
    startOffset: 4,
    endOffset: 7,
    sizeBytes: chain.segments[1]!.sizeBytes,
    logCrc32: 22,
    ...identity,
  });
  t.same(chain.segments[1]!.marker, marker, "the segment carries its marker");
});

t.test("a victim checked again: not below the floor, already remote, or unsealed, it stays", async (t) => {
  const { chain, dir } = await filledChain(t, 11);
  chain.segments[0]!.location = "remote";
  const victims = new Map([[0, 1], [4, 2], [8, 3]]);
  t.equal(
    await evictSegments(new NodeDisk(), dir, chain.segments, chain.remoteTable, victims, 4, identity),
    0,
    "4..7 is not below 4",
  );
  t.equal(
    await evictSegments(new NodeDisk(), dir, chain.segments, chain.remoteTable, victims, Infinity, identity),
    1,
    "only 4..7",
  );
  t.ok(existsSync(`${dir}/${stem(0)}.log`), "the remote one is left alone");
  t.ok(existsSync(`${dir}/${stem(8)}.log`), "the active one is never evicted");
  t.same(chain.segments.map((s) => s.location), ["remote", "remote", "local"]);
});

t.test("hashLog is the CRC32 of the whole .log", async (t) => {
  const { chain, dir } = await filledChain(t, 6);
  const first = chain.segments[0]!;
  t.equal(await hashLog(new NodeDisk(), first), crc32(readFileSync(`${dir}/${stem(0)}.log`)));
});
