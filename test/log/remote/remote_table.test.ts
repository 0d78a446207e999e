import { readFileSync, writeFileSync } from "node:fs";
import t from "tap";
import {
  encodeRemoteMarker,
  type RemoteMarker,
  remoteMarkerBytes,
} from "../../../src/log/remote/remote_marker.ts";
import {
  encodeForgetRecord,
  readRemoteTable,
  RemoteTable,
  RemoteTableError,
  remoteTableName,
  RemoteTableReplay,
} from "../../../src/log/remote/remote_table.ts";
import { crc32c, initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { FormatVersionError } from "../../../src/runtime/format_version_error.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

// The remote table: one file of 128-byte records holds a partition's tiered segments, so that boot
// reads one file, in pieces, instead of one marker file per segment.
await initCrc32c();
const disk = new NodeDisk();

function marker(startOffset: number, endOffset = startOffset + 9): RemoteMarker {
  return {
    startOffset,
    endOffset,
    sizeBytes: (endOffset - startOffset + 1) * 100,
    indexSizeBytes: 16,
    startTimestampUs: startOffset,
    endTimestampUs: endOffset,
    maxTimestampUs: endOffset,
    createdRevision: "00000000000000aa",
    purgeGeneration: 0,
    logCrc32: startOffset,
    merged: false,
  };
}

const starts = (markers: readonly RemoteMarker[]) => markers.map((m) => `${m.startOffset}..${m.endOffset}`);

/** The table of these records, replayed. */
function replayed(...records: Uint8Array[]): RemoteTableReplay {
  const bytes = new Uint8Array(records.length * remoteMarkerBytes);
  records.forEach((r, i) => bytes.set(r, i * remoteMarkerBytes));
  const replay = new RemoteTableReplay(bytes);
  while (!replay.done) replay.step(2);
  return replay;
}

const m = (start: number, end?: number) => encodeRemoteMarker(marker(start, end));

t.test("records apply in order: markers add, a marker over a range replaces it, a forget drops the front", (t) => {
  const four = [m(0), m(10), m(20), m(30)];
  t.same(starts(replayed(...four).markers()), ["0..9", "10..19", "20..29", "30..39"]);
  const merged = replayed(...four, m(10, 29));
  t.same(starts(merged.markers()), ["0..9", "10..29", "30..39"], "a merge replaces the segments it covers");
  t.equal(merged.records, 5);
  t.same(
    starts(replayed(...four, m(10, 29), m(10, 29)).markers()),
    ["0..9", "10..29", "30..39"],
    "the same marker again replaces itself",
  );
  t.same(starts(replayed(...four, encodeForgetRecord(10)).markers()), ["10..19", "20..29", "30..39"]);
  t.same(
    starts(replayed(m(0), m(20), m(10)).markers()),
    ["0..9", "10..19", "20..29"],
    "a marker in a gap goes in its place",
  );
  t.throws(
    () => replayed(...four, m(25, 34)),
    RemoteTableError,
    "a marker overlapping a segment in part contradicts the table",
  );
  const gone = replayed(...four, encodeForgetRecord(100), m(40));
  t.same(starts(gone.markers()), ["40..49"], "after a forget of everything the table goes on");
  t.same(gone.markerAt(0), marker(40), "a marker decodes whole");
  t.end();
});

t.test("a flipped bit ends the table as its torn tail; a whole record of another version is refused", (t) => {
  const flipped = encodeForgetRecord(123_456_789_012);
  flipped[20]! ^= 1;
  const torn = replayed(m(0), flipped, m(10));
  t.equal(torn.records, 1);
  t.equal(torn.tornBytes, 2 * remoteMarkerBytes, "the torn record and all after it");
  t.same(starts(torn.markers()), ["0..9"]);
  const other = m(10);
  const view = new DataView(other.buffer);
  view.setUint16(8, 99, true);
  view.setUint32(104, crc32c(other.subarray(0, 104)), true);
  t.throws(() => replayed(m(0), other), FormatVersionError);
  t.equal(
    replayed(encodeForgetRecord(123_456_789_012), m(123_456_789_012)).startOffsetAt(0),
    123_456_789_012,
  );
  t.end();
});

t.test("a table of many pieces reads back whole; a torn record ends it, and what follows counts as torn", async (t) => {
  const dir = tempDir(t);
  const table = new RemoteTable(disk, dir, 0, 0);
  const markers = Array.from({ length: 20_000 }, (_, i) => marker(i * 10));
  await table.rewrite(markers);
  await table.forget(50_000, 5_000, () => markers.slice(5_000));
  const read = await readRemoteTable(disk, dir);
  t.equal(read?.records, 20_001, "20,000 markers and a forget record over three pieces of 1 MiB");
  t.equal(read?.length, 15_000);
  t.equal(read?.startOffsetAt(0), 50_000);
  t.equal(read?.tornBytes, 0);
  const path = `${dir}/${remoteTableName}`;
  const bytes = readFileSync(path);
  bytes[remoteMarkerBytes * 3 + 7]! ^= 1;
  writeFileSync(path, bytes);
  const torn = await readRemoteTable(disk, dir);
  t.equal(torn?.records, 3);
  t.equal(torn?.tornBytes, bytes.length - 3 * remoteMarkerBytes);
  t.equal(await readRemoteTable(disk, tempDir(t)), null, "a partition with no table has none");
});

t.test("forgets append a record until the dead outnumber the live, then the table is rewritten with the live alone", async (t) => {
  const dir = tempDir(t);
  const table = new RemoteTable(disk, dir, 0, 0);
  let live = Array.from({ length: 3_000 }, (_, i) => marker(i * 10));
  for (let i = 0; i < live.length; i += 500) await table.append(live.slice(i, i + 500));
  const path = `${dir}/${remoteTableName}`;
  t.equal(readFileSync(path).length, 3_000 * remoteMarkerBytes);
  live = live.slice(100);
  await table.forget(1_000, 100, () => live);
  t.equal(table.records, 3_001, "a small forget appends one record");
  live = live.slice(2_400);
  await table.forget(25_000, 2_400, () => live);
  t.equal(table.records, 500, "past twice the live and a margin, only the live are kept");
  t.equal(readFileSync(path).length, 500 * remoteMarkerBytes);
  t.same(starts((await readRemoteTable(disk, dir))!.markers()), starts(live));
  await t.rejects(table.forget(99_999, 501, () => []), /Cannot forget 501 of 500 live segments/);
});
