import t from "tap";
import { type IndexEntry, SparseIndex } from "../../../src/log/segment/sparse_index.ts";
import { chunkAt, chunkStarts } from "../../../src/tier/cache/chunk_layout.ts";

// Batches of uneven sizes; one index entry per batch start, as the sparse index records them.
const batchSizes = [3000, 5000, 700, 9000, 4100, 2600, 8000, 1200, 6100, 3333];
const entries: IndexEntry[] = [];
let at = 0;
batchSizes.forEach((size, i) => {
  entries.push({ relativeOffset: i, position: at, timestampUs: i });
  at += size;
});
const segmentBytes = at;
const index = new SparseIndex();
for (const entry of entries) index.add(entry);

t.test("chunk boundaries fall on batch starts, nearest to k × chunk size, covering the whole segment", (t) => {
  const starts = chunkStarts(index, segmentBytes, 10_000);
  const batchStarts = new Set(entries.map((e) => e.position));
  t.ok(starts.every((s) => batchStarts.has(s)), `every boundary is a batch start: ${starts}`);
  t.equal(starts[0], 0);
  t.same(starts, [0, 8700, 21_800, 32_400], "the batch start nearest 10k, 20k and 30k");
  t.end();
});

t.test("a tail of less than half a chunk joins the last chunk; half a chunk or more is a chunk of its own", (t) => {
  t.equal(segmentBytes, 43_033, "the segment runs 3,033 bytes past four chunks of 10,000");
  t.equal(chunkStarts(index, segmentBytes, 10_000).length, 4, "so four chunks, the last 10,633 bytes");
  t.same(
    chunkStarts(index, segmentBytes, 8000),
    [0, 8000, 17_700, 24_400, 32_400],
    "5.4 chunks of 8,000: five",
  );
  t.same(chunkStarts(index, segmentBytes, 16_000), [0, 17_700, 32_400], "2.7 chunks of 16,000: three");
  t.end();
});

t.test("every batch lies in exactly one chunk: none costs two GETs", (t) => {
  const starts = chunkStarts(index, segmentBytes, 7000);
  const split = entries.filter((e, i) => {
    const end = (entries[i + 1]?.position ?? segmentBytes) - 1;
    return chunkAt(starts, segmentBytes, e.position).chunk !== chunkAt(starts, segmentBytes, end).chunk;
  });
  t.same(split, []);
  t.end();
});

t.test("lookup gives the chunk's byte range; a segment smaller than a chunk is one chunk", (t) => {
  const starts = chunkStarts(index, segmentBytes, 10_000);
  t.same(chunkAt(starts, segmentBytes, 0), { chunk: 0, start: 0, end: 8700 });
  t.same(chunkAt(starts, segmentBytes, 8700), { chunk: 1, start: 8700, end: 21_800 });
  t.same(chunkAt(starts, segmentBytes, segmentBytes - 1), { chunk: 3, start: 32_400, end: segmentBytes });
  t.same(chunkStarts(index, segmentBytes, 1 << 20), [0]);
  t.same(chunkStarts(null, segmentBytes, 10_000), [0], "without an index, the segment is one chunk");
  t.throws(() => chunkAt(starts, segmentBytes, segmentBytes), /inside the segment/);
  t.end();
});
