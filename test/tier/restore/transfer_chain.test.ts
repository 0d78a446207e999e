import t from "tap";
import {
  chainBelowFloor,
  chainEndingAt,
  type TieredObject,
} from "../../../src/tier/restore/transfer_chain.ts";

const object = (startOffset: number, endOffset: number, merged = false): TieredObject => ({
  key: `${startOffset}-${endOffset}`,
  startOffset,
  endOffset,
  sizeBytes: 100 * (endOffset - startOffset + 1),
  indexSizeBytes: 16,
  startTimestampUs: startOffset,
  endTimestampUs: endOffset,
  maxTimestampUs: endOffset,
  logCrc32: startOffset,
  merged,
});

t.test("the chain below a floor goes back through a merge's object, not the segments it replaced", (t) => {
  const objects = [
    object(0, 9),
    object(10, 19),
    object(10, 39, true),
    object(20, 29),
    object(30, 39),
    object(40, 49),
  ];
  t.same(chainBelowFloor(objects, 50).map((o) => o.key), ["0-9", "10-39", "40-49"]);
  t.same(
    chainBelowFloor(objects, 40).map((o) => o.key),
    ["0-9", "10-39"],
    "a merge that ends just below the floor",
  );
  t.same(
    chainBelowFloor(objects, 30).map((o) => o.key),
    ["0-9", "10-19", "20-29"],
    "a merge past the floor is not part of it",
  );
  t.same(
    chainEndingAt(
      [object(0, 9), object(0, 19, true), object(0, 29, true), object(10, 19), object(20, 29)],
      29,
    )
      .map((o) => o.key),
    ["0-29"],
    "of merges that end at one offset, the one that reaches back furthest",
  );
  t.same(
    chainEndingAt([object(0, 9), object(20, 29)], 29).map((o) => o.key),
    ["20-29"],
    "a gap ends the chain",
  );
  t.throws(() => chainBelowFloor(objects, 45), /no object ends just below the committed floor 45/);
  t.end();
});
