import t from "tap";
import * as inv from "../../../src/sim/cluster/cluster_invariants.ts";

const bytes = (...b: number[]) => new Uint8Array(b);

t.test("an offset acknowledged with two values is a lost write", (t) => {
  const acked = new Map([[5, "v5"]]);
  t.equal(inv.acknowledgedOnce(acked, 5, "v5"), null);
  t.equal(inv.acknowledgedOnce(acked, 6, "v6"), null);
  t.match(inv.acknowledgedOnce(acked, 5, "v9"), /offset 5 was acknowledged twice, as v5 and as v9/);
  t.end();
});

t.test("a value in the log twice is a retry appended again", (t) => {
  t.equal(inv.noValueTwice(new Map([[0, "v0"], [1, "i0"], [2, "i1"]])), null);
  t.match(
    inv.noValueTwice(new Map([[0, "i0"], [1, "v0"], [2, "i0"]])),
    /i0 is in the log twice, at offsets 0 and 2/,
  );
  t.end();
});

t.test("two nodes acknowledging writes under one leader epoch break fencing", (t) => {
  const leaders = new Map([[3, 1]]);
  t.equal(inv.oneLeaderPerEpoch(leaders, 3, 1), null);
  t.equal(inv.oneLeaderPerEpoch(leaders, 4, 2), null);
  t.match(inv.oneLeaderPerEpoch(leaders, 3, 2), /epoch 3 writes were acknowledged by node 1 and by node 2/);
  t.end();
});

t.test("the high watermark may not go back within an epoch, but a new epoch starts afresh", (t) => {
  const seen = new Map([[2, 100]]);
  t.equal(inv.highWatermarkMonotone(seen, 2, 100), null);
  t.equal(inv.highWatermarkMonotone(seen, 3, 40), null);
  t.match(inv.highWatermarkMonotone(seen, 2, 99), /went back from 100 to 99/);
  t.end();
});

t.test("the committed floor may not go back", (t) => {
  t.equal(inv.floorMonotone(10, 10), null);
  t.equal(inv.floorMonotone(10, 12), null);
  t.match(inv.floorMonotone(10, 9), /went back from 10 to 9/);
  t.end();
});

t.test("the floor may not cover records no leader committed", (t) => {
  t.equal(inv.floorCommitted(10, 10), null);
  t.match(inv.floorCommitted(11, 10), /committed floor 11 is above every high watermark \(10\)/);
  t.end();
});

t.test("a replica evicts only below its floor, and its floor is at most the committed one", (t) => {
  const segments: inv.SegmentView[] = [
    { startOffset: 0, endOffset: 9, location: "remote" },
    { startOffset: 10, endOffset: 19, location: "uploaded" },
    { startOffset: 20, endOffset: 25, location: "local" },
  ];
  t.equal(inv.evictedBelowFloor(2, segments, 10, 20), null);
  t.match(inv.evictedBelowFloor(2, segments, 21, 20), /node 2's floor 21 is above the committed floor 20/);
  const evictedAbove = [{ ...segments[0]!, endOffset: 10 }, segments[1]!];
  t.match(inv.evictedBelowFloor(2, evictedAbove, 10, 20), /evicted segment 0..10, not below its floor 10/);
  t.end();
});

t.test("the floor must be backed by a chain of objects from the deleted watermark", (t) => {
  const objects = [{ startOffset: 0, endOffset: 9 }, { startOffset: 10, endOffset: 19 }, {
    startOffset: 20,
    endOffset: 29,
  }];
  t.equal(inv.floorBacked(30, 0, objects), null);
  t.equal(inv.floorBacked(20, 0, objects), null);
  t.equal(inv.floorBacked(20, 15, objects), null, "the watermark may fall inside an object");
  t.match(inv.floorBacked(40, 0, objects), /above the bucket: no object starts at 30/);
  t.match(inv.floorBacked(30, 0, [objects[0]!, objects[2]!]), /no object starts at 10/);
  t.end();
});

t.test("every replica's remote segment must have its object, but below the deleted watermark", (t) => {
  const remote = (startOffset: number, endOffset: number, merged = false) => ({
    startOffset,
    endOffset,
    location: "remote",
    mergedEndOffset: merged ? endOffset : null,
  });
  const objects = [
    { startOffset: 0, endOffset: 19, merged: true },
    { startOffset: 20, endOffset: 29, merged: false },
  ];
  const local = { ...remote(30, 39), location: "local" };
  t.equal(inv.remoteChainBacked(1, [remote(0, 19, true), remote(20, 29), local], 0, objects), null);
  t.match(
    inv.remoteChainBacked(2, [remote(0, 9), remote(10, 19), remote(20, 29)], 0, objects),
    /node 2's remote segment 0..9 has no object/,
    "a chain that still names what a merge replaced, once it is gone",
  );
  t.equal(
    inv.remoteChainBacked(2, [remote(0, 9), remote(10, 19)], 20, []),
    null,
    "below the watermark: gone",
  );
  t.end();
});

t.test("every acknowledged value must read back at its offset", (t) => {
  const acked = new Map([[0, "a"], [1, "b"]]);
  t.equal(inv.acknowledgedPresent(acked, new Map([[0, "a"], [1, "b"], [2, "c"]])), null);
  t.match(
    inv.acknowledgedPresent(acked, new Map([[0, "a"]])),
    /acknowledged b at offset 1 reads back as nothing/,
  );
  t.match(inv.acknowledgedPresent(acked, new Map([[0, "a"], [1, "x"]])), /reads back as x/);
  t.end();
});

t.test("sealed segments at one start offset must hold the same bytes everywhere", (t) => {
  const same = [
    { holder: "node 1", startOffset: 0, bytes: bytes(1, 2, 3) },
    { holder: "node 2", startOffset: 0, bytes: bytes(1, 2, 3) },
    { holder: "node 2", startOffset: 3, bytes: bytes(9) },
  ];
  t.equal(inv.sealedIdentical(same), null);
  const flipped = [...same, { holder: "the bucket", startOffset: 0, bytes: bytes(1, 2, 4) }];
  t.match(
    inv.sealedIdentical(flipped),
    /segment 0 differs between node 1 \(3 bytes\) and the bucket \(3 bytes\)/,
  );
  const shorter = [...same, { holder: "node 3", startOffset: 0, bytes: bytes(1, 2) }];
  t.match(inv.sealedIdentical(shorter), /node 3 \(2 bytes\)/);
  t.end();
});

t.test("after GC's window no object of another incarnation or off the leader's segment starts remains", (t) => {
  const objects = [
    { key: "k0", incarnation: "r-0", startOffset: 0, endOffset: 9 },
    { key: "k10", incarnation: "r-0", startOffset: 10, endOffset: 19 },
  ];
  const chain = (...starts: number[]) =>
    starts.map((s) => ({ startOffset: s, endOffset: s + 9, merged: false }));
  t.equal(inv.noOrphans(objects, "r-0", chain(0, 10, 20)), null);
  t.match(
    inv.noOrphans(
      [...objects, { key: "dead", incarnation: "q-0", startOffset: 0, endOffset: 9 }],
      "r-0",
      chain(0, 10),
    ),
    /dead is an orphan/,
  );
  t.match(
    inv.noOrphans(
      [...objects, { key: "k5", incarnation: "r-0", startOffset: 5, endOffset: 9 }],
      "r-0",
      chain(0, 10),
    ),
    /k5 is an orphan/,
  );
  const merged = [{ startOffset: 0, endOffset: 19, merged: true }, {
    startOffset: 20,
    endOffset: 29,
    merged: false,
  }];
  t.equal(inv.noOrphans(objects, "r-0", merged), null, "what a merge replaced is kept");
  t.equal(
    inv.noOrphans([{ key: "m", incarnation: "r-0", startOffset: 0, endOffset: 29 }], "r-0", chain(20)),
    null,
    "another replica's merge past the watermark is kept",
  );
  t.end();
});

t.test("a merge's object holds the bytes of the segments it replaced", (t) => {
  const seg = (startOffset: number, bytes: number[]) => ({
    holder: "the bucket",
    startOffset,
    endOffset: startOffset + 9,
    bytes: new Uint8Array(bytes),
  });
  const parts = [seg(0, [1, 2]), seg(10, [3])];
  const good = { holder: "the bucket", startOffset: 0, bytes: new Uint8Array([1, 2, 3]) };
  const bad = { holder: "the bucket", startOffset: 0, bytes: new Uint8Array([1, 2, 4]) };
  t.equal(inv.mergesIdentical([good], parts, new Map([[good, 19]])), null);
  t.match(inv.mergesIdentical([bad], parts, new Map([[bad, 19]])), /merge of 0 to 19 \(3 bytes\) is not/);
  t.equal(
    inv.mergesIdentical([bad], parts.slice(0, 1), new Map([[bad, 19]])),
    null,
    "parts missing: not judged",
  );
  t.end();
});

t.test("a leader's last stable offset may not go back within its epoch nor pass its high watermark", (t) => {
  const seen = new Map([[2, 30]]);
  t.equal(inv.lastStableOffsetMonotone(seen, 2, 30, 40), null);
  t.equal(inv.lastStableOffsetMonotone(seen, 3, 10, 40), null, "a new epoch starts its own");
  t.match(inv.lastStableOffsetMonotone(seen, 2, 29, 40), /last stable offset went back from 30 to 29/);
  t.match(
    inv.lastStableOffsetMonotone(seen, 2, 41, 40),
    /last stable offset 41 is above the high watermark 40/,
  );
  t.end();
});

t.test("read_committed sees each transaction whole or not at all, and no aborted or open one", (t) => {
  const outcomes = new Map<string, "commit" | "abort">([
    ["t0.0", "commit"],
    ["t0.1", "commit"],
    ["t1.0", "abort"],
  ]);
  t.equal(inv.atomicallyVisible(outcomes, new Map([[0, "v0"], [1, "t0.0"], [3, "t0.1"]])), null);
  t.match(
    inv.atomicallyVisible(outcomes, new Map([[1, "t0.0"], [2, "t1.0"], [3, "t0.1"]])),
    /read t1.0 at offset 2, of a transaction aborted/,
  );
  t.match(
    inv.atomicallyVisible(outcomes, new Map([[1, "t0.0"], [3, "t0.1"], [4, "t2.0"]])),
    /read t2.0 at offset 4, of a transaction not ended/,
  );
  t.match(inv.atomicallyVisible(outcomes, new Map([[1, "t0.0"]])), /missed t0.1 of a committed transaction/);
  t.end();
});
