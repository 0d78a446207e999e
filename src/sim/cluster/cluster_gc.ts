import { bucketSegments, committedFloor, incarnationOf } from "./cluster_checks.ts";
import * as inv from "./cluster_invariants.ts";
import { deleteGraceMs, orphanSweepIntervalMs } from "./cluster_settings.ts";
import { until } from "./cluster_time.ts";
import type { ClusterWorld } from "./cluster_world.ts";

/** How long the leader has to upload every sealed segment once the cluster is healed. */
const uploadDeadlineMs = 60_000;
/** GC's window: a few sweeps and graces, after which no orphan may remain. */
const gcWindowMs = 3 * (deleteGraceMs + orphanSweepIntervalMs) + 5000;

/**
 * The end's GC window: once the floor has reached the end of the leader's last sealed segment the
 * high watermark has passed (every one that can be uploaded is), housekeeping and the controller's
 * orphan sweep get a few graces and sweeps; then the bucket must hold the live incarnation's
 * segments only, each at a start of the leader's log.
 */
export async function gcWindow(w: ClusterWorld): Promise<void> {
  const uploadable = () => {
    const log = w.leader()?.partition(w)?.log;
    if (log === undefined) return Infinity;
    // A sealed segment is uploaded once the high watermark has passed it.
    const ends = log.segments.filter((s) => s.sealed && s.endOffset < log.highWatermark).map((s) =>
      s.endOffset + 1
    );
    return Math.max(0, ...ends);
  };
  const uploaded = await until(
    w,
    () => (committedFloor(w)?.upToOffset ?? 0) >= uploadable(),
    uploadDeadlineMs,
  );
  if (!uploaded) {
    return w.fail(
      `the floor ${
        committedFloor(w)?.upToOffset ?? 0
      } did not reach the committed sealed segments' end ${uploadable()}`,
    );
  }
  const startMs = w.clock.nowMs();
  await until(w, () => w.clock.nowMs() >= startMs + gcWindowMs, gcWindowMs + 1000);
  const leader = w.leader()?.partition(w);
  if (leader === null || leader === undefined) return w.fail("no leader after GC's window");
  const chain = leader.log.segments.map((s) => ({ ...s, merged: s.mergedEndOffset !== null }));
  w.fail(inv.noOrphans(bucketSegments(w), incarnationOf(leader), chain));
}
