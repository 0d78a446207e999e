import { writeFileSync } from "node:fs";
import t from "tap";
import {
  type IndexEntry,
  readIndexFile,
  SparseIndex,
  writeIndexFile,
} from "../../../src/log/segment/sparse_index.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

const e = (relativeOffset: number, position: number, timestampUs = relativeOffset): IndexEntry => ({
  relativeOffset,
  position,
  timestampUs,
});

/** An index over `entries` as a file would hold them, with no check of their order. */
function unchecked(entries: IndexEntry[]): SparseIndex {
  const bytes = new Uint8Array(entries.length * 16);
  const view = new DataView(bytes.buffer);
  entries.forEach((entry, i) => {
    view.setUint32(i * 16, entry.relativeOffset, true);
    view.setUint32(i * 16 + 4, entry.position, true);
    view.setBigUint64(i * 16 + 8, BigInt(entry.timestampUs), true);
  });
  return SparseIndex.ofBytes(bytes)!;
}

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
  for (const row of rows) {
    t.equal(unchecked(row.entries).isConsistentWith(row.logSizeBytes), row.ok, row.name);
  }
  t.end();
});

t.test("a fetched remote index fits its segment only with increasing positions inside it", (t) => {
  t.ok(unchecked([e(0, 0), e(2, 400)]).fitsSegment(1000));
  t.notOk(unchecked([e(0, 0), e(2, 0)]).fitsSegment(1000), "a position repeated");
  t.notOk(unchecked([e(0, 0), e(2, 1000)]).fitsSegment(1000), "a position past the segment");
  t.ok(unchecked([]).fitsSegment(1000), "no entries: the read scans from the start");
  t.end();
});

t.test("index files: written whole and read back; missing or not whole entries read as null", async (t) => {
  const dir = tempDir(t);
  const disk = new NodeDisk();
  t.equal(await readIndexFile(disk, `${dir}/a.index`), null);
  const index = new SparseIndex();
  index.add(e(0, 0));
  index.add(e(3, 512));
  await writeIndexFile(disk, `${dir}/a.index`, index);
  t.same((await readIndexFile(disk, `${dir}/a.index`))!.entries(), [e(0, 0), e(3, 512)]);
  writeFileSync(`${dir}/b.index`, new Uint8Array(20));
  t.equal(await readIndexFile(disk, `${dir}/b.index`), null);
});
