import t from "tap";
import { indexEntryBytes, SparseIndex } from "../../../src/log/segment/sparse_index.ts";

t.test("lookups by offset and timestamp find the last entry at or before the target", (t) => {
  const index = new SparseIndex();
  index.add({ relativeOffset: 0, position: 0, timestampUs: 100 });
  index.add({ relativeOffset: 50, position: 4096, timestampUs: 200 });
  index.add({ relativeOffset: 120, position: 8200, timestampUs: 300 });
  t.equal(index.floorByOffset(0).position, 0);
  t.equal(index.floorByOffset(49).position, 0);
  t.equal(index.floorByOffset(50).position, 4096);
  t.equal(index.floorByOffset(10_000).position, 8200);
  t.equal(
    index.floorByTimestamp(200).position,
    0,
    "strictly before: earlier batches may share the timestamp",
  );
  t.equal(index.floorByTimestamp(201).position, 4096);
  t.equal(index.floorByTimestamp(50).position, 0);
  t.equal(index.ceilingPosition(4096), 4096);
  t.equal(index.ceilingPosition(4097), 8200);
  t.equal(index.ceilingPosition(8201), null);
  t.throws(() => index.add({ relativeOffset: 100, position: 9000, timestampUs: 400 }), /must increase/);
  t.end();
});

t.test("an index is its file's bytes: 16 each, little-endian, and a partial entry is refused", (t) => {
  const entry = { relativeOffset: 7, position: 123456, timestampUs: 1_700_000_000_000_000 };
  const index = new SparseIndex();
  index.add(entry);
  const bytes = index.bytes();
  t.equal(bytes.length, indexEntryBytes);
  const view = new DataView(bytes.buffer, bytes.byteOffset);
  t.equal(view.getUint32(0, true), 7);
  t.equal(view.getUint32(4, true), 123456);
  t.equal(view.getBigUint64(8, true), 1_700_000_000_000_000n, "a timestamp past 2^32 µs, whole");
  t.same(SparseIndex.ofBytes(bytes.slice())!.entries(), [entry]);
  t.equal(SparseIndex.ofBytes(bytes.subarray(0, 15)), null);
  t.end();
});

t.test("an index grows past its first buffer and is cut where its segment is", (t) => {
  const index = new SparseIndex();
  for (let i = 0; i < 1000; i++) index.add({ relativeOffset: i * 10, position: i * 4096, timestampUs: i });
  t.equal(index.length, 1000);
  t.equal(index.sizeBytes, 16_000, "16 bytes an entry, no object per entry");
  t.same(index.floorByOffset(5005), { relativeOffset: 5000, position: 500 * 4096, timestampUs: 500 });
  index.truncateFrom(5000);
  t.equal(index.length, 500);
  t.same(index.last, { relativeOffset: 4990, position: 499 * 4096, timestampUs: 499 });
  t.end();
});
