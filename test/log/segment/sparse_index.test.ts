import t from "tap";
import { decodeIndexEntries, encodeIndexEntry, SparseIndex } from "../../../src/log/segment/sparse_index.ts";

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
  t.throws(() => index.add({ relativeOffset: 100, position: 9000, timestampUs: 400 }), /must increase/);
  t.end();
});

t.test("entries round-trip through their 16-byte encoding; a partial entry is refused", (t) => {
  const entry = { relativeOffset: 7, position: 123456, timestampUs: 1_700_000_000_000_000 };
  const bytes = encodeIndexEntry(entry);
  t.equal(bytes.length, 16);
  t.same(decodeIndexEntries(bytes), [entry]);
  t.equal(decodeIndexEntries(bytes.subarray(0, 15)), null);
  t.end();
});
