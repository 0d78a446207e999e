import t from "tap";
import { defaultRetryProfiles } from "../../../src/objectstore/retry_policy.ts";
import {
  floorRetriesWaiting,
  inFlightCount,
  initialState,
  openedPartition,
  type PartitionUploads,
  stalledOffset,
  type UploadState,
  withoutPartition,
  withPartition,
} from "../../../src/tier/upload/upload_state.ts";

const config = {
  concurrencyMax: 2,
  transferDeadlineMs: 1000,
  profiles: defaultRetryProfiles,
  pendingPerPartitionMax: 10,
  stallAfterMs: 60_000,
};
const seg = (start: number) => ({ startOffset: start, endOffset: start + 9, sizeBytes: 1, sealedAtMs: 0 });

function state(records: Record<string, Partial<PartitionUploads>>, orphans: string[] = []): UploadState {
  let s: UploadState = { ...initialState(config), orphans: new Set(orphans) };
  for (const [key, r] of Object.entries(records)) {
    s = withPartition(s, key, { ...openedPartition(0, 0), ...r }, 0);
  }
  return s;
}

t.test("gauges read from the state", (t) => {
  const inFlight = {
    identity: "a:0:0",
    segment: seg(0),
    generation: 0,
    deadlineAtMs: 0,
    submissions: 1,
    startedAtMs: 0,
  };
  const s = state({
    a: { inFlight, pending: [seg(0)] },
    b: { stalled: true, pending: [seg(30), seg(40)] },
    c: {
      floor: 20,
      stalled: true,
      pending: [seg(20)],
      floorRetry: { upToOffset: 30, attempt: 1, retryAtMs: 5 },
    },
    d: { floorRetry: { upToOffset: 7, attempt: 2, retryAtMs: null } },
  }, ["x:0:0"]);
  t.equal(inFlightCount(s), 2, "one in flight and one orphan, which still holds its slot");
  t.equal(stalledOffset(s, 0), 20, "the lowest stalled head");
  t.equal(
    stalledOffset(s, 60_000),
    0,
    "after stallAfterMs, d's floor command that cannot commit holds its floor",
  );
  t.equal(floorRetriesWaiting(s), 2, "waiting and resubmitted retries both count until a commit");
  const quiet = state({ a: {} });
  t.same([inFlightCount(quiet), stalledOffset(quiet, 0), floorRetriesWaiting(quiet)], [0, null, 0]);
  t.end();
});

t.test("a partition joins with nothing queued or in flight; the state is never changed in place", (t) => {
  t.same(openedPartition(3, 40), {
    generation: 3,
    term: 0,
    floor: 40,
    pending: [],
    inFlight: null,
    failures: 0,
    retryAtMs: null,
    stalled: false,
    anomaly: null,
    underPressure: false,
    floorRetry: null,
    waitingSinceMs: null,
  });
  const before = initialState(config);
  const after = withPartition(before, "a", openedPartition(0, 0), 0);
  t.equal(before.partitions.size, 0);
  t.equal(after.partitions.size, 1);
  t.throws(() => initialState({ ...config, concurrencyMax: 0 }), /at least 1/);
  t.end();
});

t.test("the busy set holds exactly the partitions with work; the others cost the tick nothing", (t) => {
  const inFlight = {
    identity: "b:0:0",
    segment: seg(0),
    generation: 0,
    deadlineAtMs: 0,
    submissions: 1,
    startedAtMs: 0,
  };
  const idle = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`idle${i}`, {}]));
  let s = state({
    ...idle,
    a: { pending: [seg(0)] },
    b: { inFlight },
    c: { floorRetry: { upToOffset: 10, attempt: 1, retryAtMs: 5 } },
  });
  t.same([...s.busy].sort(), ["a", "b", "c"]);
  t.equal(s.partitions.size, 1003);
  const before = s.busy;
  s = withPartition(s, "idle3", { ...s.partitions.get("idle3")!, underPressure: true }, 0);
  t.equal(s.busy, before, "a change that brings no work leaves the busy set as it was");
  s = withPartition(s, "a", { ...s.partitions.get("a")!, pending: [] }, 0);
  s = withoutPartition(s, "b");
  t.same([...s.busy], ["c"], "work done or a partition gone leaves the set");
  t.equal(s.partitions.has("b"), false);
  t.end();
});
