import { existsSync, readFileSync, writeFileSync } from "node:fs";
import t from "tap";
import {
  encodeIndexEntries,
  type IndexEntry,
  installRemoteIndex,
  isConsistentIndex,
  readIndexFile,
  writeIndexFile,
} from "../../../src/log/segment/sparse_index.ts";
import { Segment } from "../../../src/log/segment/segment.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

const e = (relativeOffset: number, position: number, timestampUs = relativeOffset): IndexEntry => ({
  relativeOffset,
  position,
  timestampUs,
});

t.test("stored entries are trusted only when they start at 0, increase, and point inside the log", (t) => {
  const rows: { entries: IndexEntry[]; logSizeBytes: number; ok: boolean; name: string }[] = [
    { entries: [], logSizeBytes: 0, ok: true, name: "an empty log, an empty index" },
    { entries: [], logSizeBytes: 10, ok: false, name: "an empty index for a log with data" },
    { entries: [e(0, 0), e(5, 600), e(9, 1200)], logSizeBytes: 2000, ok: true, name: "increasing, inside" },
    { entries: [e(1, 0)], logSizeBytes: 100, ok: false, name: "not starting at offset 0" },
    { entries: [e(0, 10)], logSizeBytes: 100, ok: false, name: "not starting at position 0" },
    { entries: [e(0, 0), e(5, 600), e(4, 700)], logSizeBytes: 2000, ok: false, name: "offsets going back" },
    { entries: [e(0, 0), e(5, 600), e(6, 600)], logSizeBytes: 2000, ok: false, name: "a position repeated" },
    { entries: [e(0, 0, 9), e(5, 600, 8)], logSizeBytes: 2000, ok: false, name: "timestamps going back" },
    { entries: [e(0, 0), e(5, 2000)], logSizeBytes: 2000, ok: false, name: "pointing past the log" },
  ];
  for (const row of rows) t.equal(isConsistentIndex(row.entries, row.logSizeBytes), row.ok, row.name);
  t.end();
});

t.test("index files: written whole and read back; missing or not whole entries read as null", async (t) => {
  const dir = tempDir(t);
  const disk = new NodeDisk();
  t.equal(await readIndexFile(disk, `${dir}/a.index`), null);
  await writeIndexFile(disk, `${dir}/a.index`, [e(0, 0), e(3, 512)]);
  t.same(await readIndexFile(disk, `${dir}/a.index`), [e(0, 0), e(3, 512)]);
  writeFileSync(`${dir}/b.index`, new Uint8Array(20));
  t.equal(await readIndexFile(disk, `${dir}/b.index`), null);
});

t.test("a fetched remote index is installed only if consistent and none is loaded", async (t) => {
  const dir = tempDir(t);
  const disk = new NodeDisk();
  const remote = () => {
    const s = new Segment(dir, 0);
    s.sizeBytes = 1000;
    s.location = "remote";
    return s;
  };
  const refused = [
    [e(0, 0), e(2, 0)],
    [e(0, 0), e(2, 1000)],
  ];
  for (const entries of refused) {
    t.notOk(await installRemoteIndex(disk, remote(), encodeIndexEntries(entries)));
  }
  t.notOk(await installRemoteIndex(disk, remote(), new Uint8Array(7)), "not whole entries");
  t.notOk(existsSync(remote().indexPath), "nothing refused is stored");
  const segment = remote();
  const bytes = encodeIndexEntries([e(0, 0), e(2, 400)]);
  t.ok(await installRemoteIndex(disk, segment, bytes));
  t.same(segment.index.entries(), [e(0, 0), e(2, 400)]);
  t.equal(segment.lastIndexedPosition, 400);
  t.same([...readFileSync(segment.indexPath)], [...bytes], "stored for the next boot");
  t.notOk(await installRemoteIndex(disk, segment, bytes), "a loaded index is not replaced");
  const local = new Segment(dir, 0);
  await t.rejects(installRemoteIndex(disk, local, bytes), /only a remote segment's index is fetched/);
});
