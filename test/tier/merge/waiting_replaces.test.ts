import t from "tap";
import type { ReplaceRemoteSegments } from "../../../src/log/segment/segment_replacement.ts";
import {
  WaitingReplaces,
  waitingReplacesMax,
  waitingReplacesRetryIntervalMs,
} from "../../../src/tier/merge/waiting_replaces.ts";
import { mergeReplace } from "../../helpers/replace_commands.ts";

function replace(partition: string, startOffset: number, endOffset = startOffset + 9): ReplaceRemoteSegments {
  return mergeReplace(partition, startOffset, endOffset);
}

t.test("replaces wait per partition and start, are tried once a second, oldest start first", (t) => {
  const waiting = new WaitingReplaces();
  t.equal(waiting.add(replace("1/1/0", 20)), null);
  t.equal(waiting.add(replace("1/1/0", 0)), null);
  t.equal(waiting.add(replace("1/1/0", 0, 19)), null, "a later replace from the same start takes its place");
  t.equal(waiting.count, 2);
  const due = waiting.takeDue(0);
  t.same(due.map((r) => [r.markers[0]!.startOffset, r.markers[0]!.endOffset]), [[0, 19], [20, 29]]);
  t.equal(waiting.count, 0);
  waiting.add(replace("1/1/0", 0));
  t.same(waiting.takeDue(waitingReplacesRetryIntervalMs - 1), [], "not before the interval");
  t.equal(waiting.takeDue(waitingReplacesRetryIntervalMs).length, 1);
  waiting.add(replace("1/1/1", 0));
  waiting.forget("1/1/1");
  t.equal(waiting.count, 0, "a partition gone takes its replaces");
  t.end();
});

t.test("the waiting replaces are bounded: past the bound the oldest is dropped and returned", (t) => {
  const waiting = new WaitingReplaces();
  let dropsWithin = 0;
  for (let i = 0; i < waitingReplacesMax; i++) {
    if (waiting.add(replace("1/1/0", i * 10)) !== null) dropsWithin++;
  }
  t.equal(dropsWithin, 0, "none dropped within the bound");
  const dropped = waiting.add(replace("1/1/1", 0));
  t.equal(dropped?.partition, "1/1/0");
  t.equal(dropped?.markers[0]?.startOffset, 0);
  t.equal(waiting.count, waitingReplacesMax);
  t.end();
});
