import t from "tap";
import { type AlignedSegment, alignmentOf } from "../../../src/cluster/replication/segment_alignment.ts";

const seg = (startOffset: number, endOffset: number, location: AlignedSegment["location"] = "local") => ({
  startOffset,
  endOffset,
  location,
});

t.test("an empty last segment where the leader starts none is cut back to the segment before", (t) => {
  // Rolled at 150 as a deposed leader; the leader's segment runs on from 104 past 150.
  const segments = [seg(0, 103), seg(104, 149), seg(150, 149)];
  t.same(alignmentOf(segments, 150, []), { kind: "refetch", offset: 104 });
  t.same(alignmentOf(segments, 150, [180]), { kind: "refetch", offset: 104 }, "a later start does not count");
  t.end();
});

t.test("a boundary the leader shares, a segment with records, or a single segment is aligned", (t) => {
  t.same(alignmentOf([seg(0, 103), seg(104, 149), seg(150, 149)], 150, [150]), { kind: "aligned" });
  t.same(
    alignmentOf([seg(0, 103), seg(104, 160)], 161, []),
    { kind: "aligned" },
    "the last segment holds records",
  );
  t.same(alignmentOf([seg(0, -1)], 0, []), { kind: "aligned" }, "nothing before it");
  t.end();
});

t.test("a boundary after a segment that is no longer local cannot be cut", (t) => {
  t.same(alignmentOf([seg(0, 103, "remote"), seg(104, 103)], 104, []), { kind: "stuck", boundary: 104 });
  t.same(alignmentOf([seg(0, 103, "uploaded"), seg(104, 103)], 104, []), { kind: "stuck", boundary: 104 });
  t.end();
});
