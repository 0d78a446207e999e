import t from "tap";
import type { RemoteMarker } from "../../../src/log/remote/remote_marker.ts";
import { remoteSegmentOf, Segment } from "../../../src/log/segment/segment.ts";
import { decideReplace } from "../../../src/log/segment/segment_replacement.ts";

const identity = { createdRevision: "00000000000000aa", purgeGeneration: 0 };
const marker = (startOffset: number, endOffset: number, merged = false): RemoteMarker => ({
  startOffset,
  endOffset,
  sizeBytes: 100 * (endOffset - startOffset + 1),
  indexSizeBytes: 16,
  startTimestampUs: startOffset,
  endTimestampUs: endOffset,
  maxTimestampUs: endOffset,
  ...identity,
  logCrc32: startOffset,
  merged,
});
/** Remote segments of 10 offsets from 0 to 49, then a local one and the active one. */
function chain(): Segment[] {
  const remote = [0, 10, 20, 30, 40].map((s) => remoteSegmentOf("/p", marker(s, s + 9)));
  const local = new Segment("/p", 50);
  local.endOffset = 59;
  local.sealed = true;
  return [...remote, local, new Segment("/p", 60)];
}

t.test("a replace takes out the remote segments its markers cover, each marker ending where one of them does", (t) => {
  t.same(decideReplace(chain(), [marker(10, 39, true)], identity), { kind: "replace", first: 1, count: 3 });
  t.same(
    decideReplace(chain(), [marker(0, 19, true), marker(20, 49, true)], identity),
    { kind: "replace", first: 0, count: 5 },
    "several segments in (compaction's shape)",
  );
  t.end();
});

t.test("a replace the chain holds already is a replay; one it no longer holds as found is rejected; one over a local segment waits", (t) => {
  const merged = chain();
  merged.splice(1, 3, remoteSegmentOf("/p", marker(10, 39, true)));
  t.same(decideReplace(merged, [marker(10, 39, true)], identity), { kind: "already" });
  const cases: [string, RemoteMarker[], RegExp][] = [
    ["no segment starts there", [marker(15, 39, true)], /no segment starts at 15/],
    ["a marker ends inside a segment", [marker(10, 34, true)], /ends past 34/],
    [
      "a middle boundary of no segment",
      [marker(0, 14, true), marker(15, 29, true)],
      /no segment of 0..29 ends at 14/,
    ],
    ["another incarnation", [{ ...marker(10, 39, true), purgeGeneration: 1 }], /of 00000000000000aa-1/],
  ];
  for (const [what, markers, reason] of cases) {
    const decision = decideReplace(chain(), markers, identity);
    t.equal(decision.kind, "rejected", what);
    t.match(decision.kind === "rejected" ? decision.reason : "", reason, what);
  }
  const local = decideReplace(chain(), [marker(40, 59, true)], identity);
  t.same(local, { kind: "wait", reason: "segment 50 is not remote yet" }, "a local segment: put off");
  t.throws(() => decideReplace(chain(), [], identity), /by none/);
  t.throws(() => decideReplace(chain(), [marker(0, 9), marker(20, 29)], identity), /not contiguous/);
  t.end();
});
