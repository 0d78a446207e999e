import t from "tap";
import { AssertionError } from "../../../src/runtime/assert.ts";
import { assertChainOrder, type RetentionSegment } from "../../../src/log/retention/total_retention.ts";
import { retentionChain } from "../../helpers/retention_chain.ts";

const chain = retentionChain([1, 2, 3], [], "local");
const edit = (i: number, change: Partial<RetentionSegment>) =>
  chain.map((s, j) => (j === i ? { ...s, ...change } : s));

t.test("a contiguous chain passes, and so do an empty one and an empty active segment", (t) => {
  t.doesNotThrow(() => assertChainOrder(chain));
  t.doesNotThrow(() => assertChainOrder([]), "between a purge's take and its restart");
  t.doesNotThrow(() =>
    assertChainOrder([...chain, { ...chain[2]!, startOffset: 300, endOffset: 299, sizeBytes: 0 }])
  );
  t.end();
});

t.test("a hole, an overlap, a negative size or an end before the start are refused", (t) => {
  const rows: { name: string; segments: RetentionSegment[] }[] = [
    { name: "a hole", segments: edit(1, { startOffset: 101 }) },
    { name: "an overlap", segments: edit(1, { startOffset: 99 }) },
    { name: "out of order", segments: [chain[1]!, chain[0]!, chain[2]!] },
    { name: "a negative size", segments: edit(0, { sizeBytes: -1 }) },
    { name: "an end before the start", segments: edit(2, { endOffset: 198 }) },
  ];
  for (const row of rows) t.throws(() => assertChainOrder(row.segments), AssertionError, row.name);
  t.end();
});
